package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// The tests run the webhooks in a manager's webhook server, registered with a real
// kube-apiserver (testenv with Options.Webhooks), and send it what a user would: every rejection
// they see comes from the API server.

var env *testenv.Environment

// served is the webhook server of the manager run starts.
var served webhook.Server

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{Webhooks: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		}
	}()
	// StartManager returns once the webhook server listens: the API server calls it from the first
	// request on.
	_, stop, err := e.StartManager(func(_ context.Context, m ctrl.Manager) error {
		served = m.GetWebhookServer()
		if err := (&clusterwebhooks.Cluster{}).SetupWebhookWithManager(m); err != nil {
			return err
		}
		return clusterwebhooks.SetupConfigWebhooksWithManager(m, clusterwebhooks.Admins{})
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return m.Run()
}

// causes returns the fields an Invalid error from the API server names.
func causes(g Gomega, err error) []string {
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	var fields []string
	for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, cause.Field)
	}
	return fields
}

func localCluster(ns, name, group string) *flotillav1.Cluster {
	return &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{
				Name: group, Count: 1, MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"},
			}},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
}

func TestTheAPIServerDefaultsAndValidatesClusters(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)

	t.Run("a Cluster whose MachineDeployment name would exceed 63 characters is refused, naming the group", func(t *testing.T) {
		g := NewWithT(t)
		err := env.Client.Create(ctx, localCluster(ns, strings.Repeat("c", 30), strings.Repeat("g", 40)))
		g.Expect(causes(g, err)).To(ConsistOf("spec.workerNodeGroups[0].name"))
		g.Expect(err.Error()).To(ContainSubstring("shorten the group or the cluster name"))
	})
	t.Run("a valid Cluster is created with its defaults", func(t *testing.T) {
		g := NewWithT(t)
		c := localCluster(ns, "w1", "md-0")
		g.Expect(env.Client.Create(ctx, c)).To(Succeed())
		g.Expect(c.Spec.ControlPlane.Count).To(Equal(int32(1)))
		g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{flotillav1.DefaultPodCIDR}))

		t.Run("and an update that breaks a rule is refused", func(t *testing.T) {
			g := NewWithT(t)
			changed := c.DeepCopy()
			changed.Spec.ControlPlane.Count = 3
			err := env.Client.Update(ctx, changed)
			g.Expect(causes(g, err)).To(ConsistOf("spec.controlPlane.count"))
			g.Expect(err.Error()).To(ContainSubstring("the local provider runs one hosted control plane per cluster"))
		})
	})
}

func TestTheAPIServerValidatesProviderConfigs(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }

	tests := []struct {
		name       string
		obj        ctrlclient.Object
		wantFields []string
		wantText   string
	}{
		{
			name: "a LocalMachineConfig with a misspelt resource is refused",
			obj: &infrav1.LocalMachineConfig{ObjectMeta: meta("typo"), Spec: infrav1.LocalMachineConfigSpec{
				Capacity: corev1.ResourceList{"cpus": resource.MustParse("4")}}},
			wantFields: []string{"spec.capacity[cpus]"}, wantText: `"cpus" is not a resource a Node reports`,
		},
		{
			name: "a valid LocalMachineConfig is created",
			obj: &infrav1.LocalMachineConfig{ObjectMeta: meta("small"), Spec: infrav1.LocalMachineConfigSpec{
				Capacity: corev1.ResourceList{"cpu": resource.MustParse("4")}}},
		},
		{
			name: "a PacketDatacenterConfig whose facility is no facility and whose identity is no object name is refused",
			obj: &infrav1.PacketDatacenterConfig{ObjectMeta: meta("bad"), Spec: infrav1.PacketDatacenterConfigSpec{
				ProjectID: "p-1", Metro: "da", Facility: "DA 11", IdentityRef: &infrav1.PacketClusterIdentityReference{Name: "Packet_Key"}}},
			wantFields: []string{"spec.facility", "spec.identityRef.name"}, wantText: "is not a PacketClusterIdentity name",
		},
		{
			name: "a valid PacketDatacenterConfig is created",
			obj: &infrav1.PacketDatacenterConfig{ObjectMeta: meta("metal"), Spec: infrav1.PacketDatacenterConfigSpec{
				ProjectID: "p-1", Metro: "da", Facility: "da11"}},
		},
		{
			name: "a PacketMachineConfig with a private key for an SSH key is refused without echoing it",
			obj: &infrav1.PacketMachineConfig{ObjectMeta: meta("leaky"), Spec: infrav1.PacketMachineConfigSpec{
				Plan: "c3.small.x86", SSHAuthorizedKeys: []string{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAprivatebody\n-----END OPENSSH PRIVATE KEY-----"}}},
			wantFields: []string{"spec.sshAuthorizedKeys[0]"}, wantText: "this is a private key",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := env.Client.Create(ctx, tt.obj)
			if tt.wantFields == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(causes(g, err)).To(ConsistOf(tt.wantFields))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
			g.Expect(err.Error()).NotTo(ContainSubstring("privatebody"), "a key is never echoed")
		})
	}

	t.Run("a spec change of a valid config that breaks a rule is refused", func(t *testing.T) {
		g := NewWithT(t)
		mc := &infrav1.LocalMachineConfig{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "small"}, mc)).To(Succeed())
		mc.Spec.Capacity["memory"] = resource.MustParse("-1Gi")
		err := env.Client.Update(ctx, mc)
		g.Expect(causes(g, err)).To(ConsistOf("spec.capacity[memory]"))
	})
}

// Every config kind of the provider registry has its validating webhook: a generated webhook
// configuration covers its resource on create and update, and the manager serves that
// configuration's path.
func TestEveryProviderConfigHasAWebhook(t *testing.T) {
	_, validating, err := config.WebhookConfigurations(config.FlotillaWebhooks)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, p := range providers.All() {
		for _, c := range []providers.Config{p.DatacenterConfig, p.MachineConfig} {
			t.Run(c.Kind, func(t *testing.T) {
				g := NewWithT(t)
				gvk := c.GroupVersionKind()
				mapping, err := env.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
				g.Expect(err).NotTo(HaveOccurred())
				var paths []string
				for _, configuration := range validating {
					for _, w := range configuration.Webhooks {
						for _, rule := range w.Rules {
							if slices.Contains(rule.APIGroups, gvk.Group) && slices.Contains(rule.Resources, mapping.Resource.Resource) &&
								slices.Contains(rule.Operations, admissionregistrationv1.Create) && slices.Contains(rule.Operations, admissionregistrationv1.Update) {
								paths = append(paths, *w.ClientConfig.Service.Path)
							}
						}
					}
				}
				g.Expect(paths).To(HaveLen(1), "one validating webhook of %s", mapping.Resource.Resource)
				_, pattern := served.WebhookMux().Handler(&http.Request{Method: http.MethodPost, URL: &url.URL{Path: paths[0]}})
				g.Expect(pattern).To(Equal(paths[0]), "the manager serves the webhook")
			})
		}
	}
}
