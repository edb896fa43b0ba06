package config_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// No CRDs: the tests install them with config.Install.
	os.Exit(testenv.Run(m, testenv.Options{SkipCRDs: true}, func(e *testenv.Environment) { env = e }))
}

func crdsByName(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := config.CRDs()
	if err != nil {
		t.Fatalf("CRDs: %v", err)
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		byName[crd.Name] = crd
	}
	return byName
}

func TestCRDsHoldClusterAPIAndFlotilla(t *testing.T) {
	g := NewWithT(t)
	byName := crdsByName(t)
	for _, name := range []string{
		"clusters.cluster.x-k8s.io", "machines.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
		"machinedeployments.cluster.x-k8s.io", "machinehealthchecks.cluster.x-k8s.io",
		"machinepools.cluster.x-k8s.io", "machinedrainrules.cluster.x-k8s.io", "clusterclasses.cluster.x-k8s.io",
		"clusterresourcesets.addons.cluster.x-k8s.io", "clusterresourcesetbindings.addons.cluster.x-k8s.io",
		"ipaddresses.ipam.cluster.x-k8s.io", "ipaddressclaims.ipam.cluster.x-k8s.io",
		"extensionconfigs.runtime.cluster.x-k8s.io", "providers.clusterctl.cluster.x-k8s.io",
		"clusters.cluster.flotilla.dev", "localcontrolplanes.controlplane.flotilla.dev",
		"localmachines.infrastructure.flotilla.dev",
		"devclusters.infrastructure.cluster.x-k8s.io", "devmachines.infrastructure.cluster.x-k8s.io",
		"devclustertemplates.infrastructure.cluster.x-k8s.io", "devmachinetemplates.infrastructure.cluster.x-k8s.io",
	} {
		g.Expect(byName).To(HaveKey(name))
	}
}

func TestClusterAPICRDsServeOnlyTheirStorageVersionWithoutConversion(t *testing.T) {
	for name, crd := range crdsByName(t) {
		if !strings.HasSuffix(crd.Spec.Group, "cluster.x-k8s.io") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			g.Expect(crd.Spec.Versions[0].Served).To(BeTrue())
			g.Expect(crd.Spec.Versions[0].Storage).To(BeTrue())
			g.Expect(crd.Spec.Conversion).To(BeNil())
			if crd.Spec.Group == "clusterctl.cluster.x-k8s.io" {
				g.Expect(crd.Spec.Versions[0].Name).To(Equal("v1alpha3"))
				g.Expect(crd.Labels).To(HaveKeyWithValue("clusterctl.cluster.x-k8s.io/core", "inventory"))
				return
			}
			g.Expect(crd.Spec.Versions[0].Name).To(Equal("v1beta2"))
			// clusterctl move discovers the types to move by this label.
			g.Expect(crd.Labels).To(HaveKeyWithValue("clusterctl.cluster.x-k8s.io", ""))
			if crd.Spec.Group == "infrastructure.cluster.x-k8s.io" {
				// Cluster API's in-memory provider, a provider of its own, with its contract.
				g.Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/provider", "infrastructure-in-memory"))
				g.Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/v1beta2", "v1beta2"))
				return
			}
			g.Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/provider", "cluster-api"))
		})
	}
}

func TestWebhookConfigurationsOfClusterAPIAreNamedAfterTheirSource(t *testing.T) {
	g := NewWithT(t)
	mutating, validating, err := config.WebhookConfigurations(config.ClusterAPIWebhooks)
	g.Expect(err).NotTo(HaveOccurred())
	var mutatingNames, validatingNames, paths []string
	for _, cfg := range mutating {
		mutatingNames = append(mutatingNames, cfg.Name)
	}
	for _, cfg := range validating {
		validatingNames = append(validatingNames, cfg.Name)
		for _, wh := range cfg.Webhooks {
			g.Expect(wh.ClientConfig.Service).NotTo(BeNil())
			paths = append(paths, *wh.ClientConfig.Service.Path)
		}
	}
	// The core's, and the kubeadm bootstrap and control plane providers'.
	g.Expect(mutatingNames).To(ConsistOf("capi-mutating-webhook-configuration",
		"capi-kubeadm-bootstrap-mutating-webhook-configuration", "capi-kubeadm-controlplane-mutating-webhook-configuration"))
	g.Expect(validatingNames).To(ConsistOf("capi-validating-webhook-configuration",
		"capi-kubeadm-bootstrap-validating-webhook-configuration", "capi-kubeadm-controlplane-validating-webhook-configuration"))
	g.Expect(paths).To(ContainElements("/validate-cluster-x-k8s-io-v1beta2-cluster", "/validate-controlplane-cluster-x-k8s-io-v1beta2-kubeadmcontrolplane"))

	_, _, err = config.WebhookConfigurations("nonsense")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown webhook source "nonsense"`)))
}

func TestInstallEstablishesEveryCRDAndCanRunAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	g.Expect(config.Install(ctx, env.Client)).To(Succeed())
	// A second run, as after an upgrade, applies over the installed CRDs.
	g.Expect(config.Install(ctx, env.Client)).To(Succeed())

	for name := range crdsByName(t) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: name}, crd)).To(Succeed())
		g.Expect(crd.Status.Conditions).To(ContainElement(And(
			HaveField("Type", apiextensionsv1.Established),
			HaveField("Status", apiextensionsv1.ConditionTrue),
		)), "CRD %s", name)
		g.Expect(crd.ManagedFields).To(ContainElement(HaveField("Manager", config.FieldOwner)))
	}
}
