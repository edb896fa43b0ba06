package testenv_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}

func TestTheAPIServerServesClusterAPIOnlyAtItsStorageVersion(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	groups, err := dc.ServerGroups()
	g.Expect(err).NotTo(HaveOccurred())

	served := map[string][]string{}
	for _, group := range groups.Groups {
		for _, v := range group.Versions {
			served[group.Name] = append(served[group.Name], v.Version)
		}
	}
	g.Expect(served).To(HaveKeyWithValue("cluster.x-k8s.io", []string{"v1beta2"}))
	g.Expect(served).To(HaveKeyWithValue("addons.cluster.x-k8s.io", []string{"v1beta2"}))
	g.Expect(served).To(HaveKeyWithValue("ipam.cluster.x-k8s.io", []string{"v1beta2"}))
	g.Expect(served).To(HaveKeyWithValue("runtime.cluster.x-k8s.io", []string{"v1beta2"}))
	g.Expect(served).To(HaveKeyWithValue("clusterctl.cluster.x-k8s.io", []string{"v1alpha3"}))
	for _, group := range []string{"cluster.flotilla.dev", "infrastructure.flotilla.dev", "controlplane.flotilla.dev"} {
		g.Expect(served).To(HaveKey(group))
		g.Expect(slices.Contains(served[group], "v1alpha1")).To(BeTrue(), "group %s serves %v", group, served[group])
	}
}

func TestObjectsOfClusterAPIAndFlotillaCanBeStoredAndRead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	capiCluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"},
		Spec:       clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}},
	}
	g.Expect(env.Client.Create(ctx, capiCluster)).To(Succeed())
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(capiCluster), &clusterv1.Cluster{})).To(Succeed())

	list := &flotillav1.ClusterList{}
	g.Expect(env.Client.List(ctx, list, ctrlclient.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
}

// TestWebhooksCallTheTestsWebhookServer starts a second Environment with Flotilla's webhook
// configurations installed and serves them from a manager StartManager starts: the API server
// calls its webhook server from the first request on.
func TestWebhooksCallTheTestsWebhookServer(t *testing.T) {
	g := NewWithT(t)
	e, err := testenv.Start(testenv.Options{Webhooks: true})
	g.Expect(err).NotTo(HaveOccurred())
	// A cleanup, not a defer: it must run after NewNamespace's.
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})

	mutating, validating, err := config.WebhookConfigurations(config.FlotillaWebhooks)
	g.Expect(err).NotTo(HaveOccurred())
	var paths []string
	for _, cfg := range mutating {
		for _, wh := range cfg.Webhooks {
			paths = append(paths, *wh.ClientConfig.Service.Path)
		}
	}
	for _, cfg := range validating {
		for _, wh := range cfg.Webhooks {
			paths = append(paths, *wh.ClientConfig.Service.Path)
		}
	}
	if len(paths) == 0 {
		t.Skip("Flotilla declares no webhook yet (config/webhook/manifests.yaml is absent)")
	}

	deny := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Denied("denied by the test's webhook server")
	})}
	ctx, stop, err := e.StartManager(func(_ context.Context, mgr ctrl.Manager) error {
		for _, p := range paths {
			mgr.GetWebhookServer().Register(p, deny)
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(stop()).To(Succeed()) }()

	// No retry: StartManager returned once the webhook server listened.
	ns := e.NewNamespace(t)
	cluster := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "denied"}}
	g.Expect(e.Client.Create(ctx, cluster)).To(MatchError(ContainSubstring("denied by the test's webhook server")))
}

func TestRunManagerSaysWhenTheManagerStopsBeforeItIsReady(t *testing.T) {
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	broken := func(context.Context) error { return errors.New("the manager's setup failed") }
	_, _, err = testenv.RunManager(context.Background(), mgr, broken, testenv.Readiness{})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("the manager stopped before it was ready"),
		ContainSubstring("the manager's setup failed"),
	)))
}

func TestStartSaysHowToBuildMissingBinaries(t *testing.T) {
	g := NewWithT(t)
	_, err := testenv.Start(testenv.Options{BinRoot: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("run: flotilla binaries build v1.36.3")))
}
