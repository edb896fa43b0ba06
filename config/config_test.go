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
			g.Expect(crd.Labels).To(HaveKeyWithValue("cluster.x-k8s.io/provider", "cluster-api"))
		})
	}
}

func TestWebhookConfigurationsOfClusterAPIAreNamedAfterTheirSource(t *testing.T) {
	g := NewWithT(t)
	mutating, validating, err := config.WebhookConfigurations(config.ClusterAPIWebhooks)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mutating).To(HaveLen(1))
	g.Expect(validating).To(HaveLen(1))
	g.Expect(mutating[0].Name).To(Equal("capi-mutating-webhook-configuration"))
	g.Expect(validating[0].Name).To(Equal("capi-validating-webhook-configuration"))

	var paths []string
	for _, wh := range validating[0].Webhooks {
		g.Expect(wh.ClientConfig.Service).NotTo(BeNil())
		paths = append(paths, *wh.ClientConfig.Service.Path)
	}
	g.Expect(paths).To(ContainElement("/validate-cluster-x-k8s-io-v1beta2-cluster"))

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
