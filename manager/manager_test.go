package manager_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback test endpoint
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestManagerRunsClusterAPIAndServesWebhooksOnLoopback starts the manager with every component
// against the test API server and checks what a user of the management cluster would see.
func TestManagerRunsClusterAPIAndServesWebhooksOnLoopback(t *testing.T) {
	g := NewWithT(t)
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	ctrl.SetLogger(log)
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	defer cancel()

	healthAddr, metricsAddr := freeAddr(t), freeAddr(t)
	identities, err := env.ManagerIdentities(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := manager.New(ctx, identities, manager.Options{
		Components:                   []string{"capi"},
		HealthProbeBindAddress:       healthAddr,
		MetricsBindAddress:           metricsAddr,
		LeaderElection:               true,
		Home:                         t.TempDir(),
		Version:                      "v0.0.0-test",
		SkipControllerNameValidation: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.ID()).To(Equal("flotilla-manager-capi"))
	g.Expect(m.Ready()).To(MatchError(ContainSubstring("not been started")), "not ready before it runs")
	_, stop, err := testenv.RunManager(ctx, m.Manager(), m.Run, testenv.Readiness{Checks: []func() error{m.Ready}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(stop()).To(Succeed()) }()

	// Ready means: webhook server listening and webhook configurations registered; the probes
	// say what Ready says.
	code, body, err := get("http://" + healthAddr + "/readyz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)
	code, body, err = get("http://" + healthAddr + "/healthz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK), body)

	t.Run("the manager records its version in flotilla-system", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(version.Recorded(ctx, env.Client)).To(Equal("v0.0.0-test"))
	})

	t.Run("the manager and each component hold a leader election lease in flotilla-system", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range []string{m.ID(), "flotilla-capi"} {
			g.Eventually(func(g Gomega) {
				lease := &coordinationv1.Lease{}
				g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: manager.Namespace, Name: name}, lease)).To(Succeed())
				g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())))
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "lease %s", name)
		}
	})

	t.Run("webhooks are registered by URL on loopback with a CA bundle", func(t *testing.T) {
		g := NewWithT(t)
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: m.ID()}, validating)).To(Succeed())
		g.Expect(validating.Webhooks).To(ContainElement(And(
			HaveField("Name", "validation.cluster.cluster.x-k8s.io"),
			HaveField("ClientConfig.URL", HaveValue(Equal(m.WebhookURL()+"/validate-cluster-x-k8s-io-v1beta2-cluster"))),
			HaveField("ClientConfig.CABundle", Not(BeEmpty())),
		)))
		// Only served webhooks are registered: no MachinePool webhook without a MachinePool reconciler.
		g.Expect(validating.Webhooks).NotTo(ContainElement(HaveField("Name", "validation.machinepool.cluster.x-k8s.io")))
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: m.ID()}, mutating)).To(Succeed())
		g.Expect(mutating.Webhooks).To(ContainElement(HaveField("Name", "default.machine.cluster.x-k8s.io")))
	})

	ns := env.NewNamespace(t)
	t.Run("the API server calls the webhooks: a Machine is defaulted and an invalid one rejected", func(t *testing.T) {
		g := NewWithT(t)
		newMachine := func(name, version string) *clusterv1.Machine {
			return &clusterv1.Machine{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: clusterv1.MachineSpec{
					ClusterName:       "absent",
					Version:           version,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("absent-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.flotilla.dev", Kind: "LocalMachine", Name: name},
				},
			}
		}
		// The API server's view of the webhook configurations catches up with the registration a
		// moment after it.
		g.Eventually(func(g Gomega) {
			probe := newMachine("probe", "1.36.3")
			g.Expect(env.Client.Create(ctx, probe, ctrlclient.DryRunAll)).To(Succeed())
			g.Expect(probe.Labels).To(HaveKey(clusterv1.ClusterNameLabel))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		machine := newMachine("defaulted", "1.36.3")
		g.Expect(env.Client.Create(ctx, machine)).To(Succeed())
		// Cluster API's defaulting webhook labels the Machine with its cluster and prefixes the version.
		g.Expect(machine.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "absent"))
		g.Expect(machine.Spec.Version).To(Equal("v1.36.3"))

		err := env.Client.Create(ctx, newMachine("invalid", "not-a-version"))
		g.Expect(err).To(MatchError(ContainSubstring("validation.machine.cluster.x-k8s.io")))
	})

	t.Run("Cluster API's Cluster controller reconciles a Cluster", func(t *testing.T) {
		g := NewWithT(t)
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reconciled"},
			Spec: clusterv1.ClusterSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.flotilla.dev", Kind: "LocalCluster", Name: "reconciled"},
			},
		}
		g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := &clusterv1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(cluster), got)).To(Succeed())
			g.Expect(got.Finalizers).To(ContainElement(clusterv1.ClusterFinalizer))
			g.Expect(got.Status.Conditions).To(ContainElement(And(
				HaveField("Type", clusterv1.PausedCondition),
				HaveField("Status", metav1.ConditionFalse),
			)))
			g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Type", clusterv1.ClusterAvailableCondition)))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	t.Run("the metrics endpoint answers on loopback", func(t *testing.T) {
		g := NewWithT(t)
		code, body, err := get(fmt.Sprintf("http://%s/metrics", metricsAddr))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		g.Expect(body).To(ContainSubstring(`controller_runtime_reconcile_total{controller="cluster"`))
	})

	t.Run("flotilla-system exists", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: manager.Namespace}, &corev1.Namespace{})).To(Succeed())
	})

	t.Run("a second manager can be built in the same process", func(t *testing.T) {
		g := NewWithT(t)
		_, err := manager.New(ctx, identities, manager.Options{
			Components:                   []string{"capi"},
			HealthProbeBindAddress:       "0",
			MetricsBindAddress:           "0",
			WebhookCertDir:               t.TempDir(),
			SkipControllerNameValidation: true,
		})
		g.Expect(err).NotTo(HaveOccurred())
	})
}
