package manager_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/addons/values"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback test endpoint
	return readResponse(resp, err)
}

// getWithToken asks url over HTTPS, not verifying the manager's self-signed certificate, with
// token as bearer token unless empty.
func getWithToken(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil) //nolint:noctx // a loopback test endpoint
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test checks authorization, not the certificate
	return readResponse(client.Do(req))
}

func readResponse(resp *http.Response, err error) (int, string, error) {
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serviceAccountToken returns a token of a new ServiceAccount name in namespace ns, allowed to
// get the non-resource URL /metrics when metricsReader.
func serviceAccountToken(ctx context.Context, t *testing.T, ns, name string, metricsReader bool) string {
	t.Helper()
	g := NewWithT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Expect(env.Client.Create(ctx, sa)).To(Succeed())
	if metricsReader {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		for _, obj := range []ctrlclient.Object{role, binding} {
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		}
	}
	clientset, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	token, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return token.Status.Token
}

// TestManagerRunsClusterAPIAndServesWebhooksOnLoopback starts the manager with every component
// against the test API server and checks what a user of the management cluster would see.
func TestManagerRunsClusterAPIAndServesWebhooksOnLoopback(t *testing.T) {
	g := NewWithT(t)
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	ctrl.SetLogger(log)
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	defer cancel()

	// Another user of the machine holds the ports the manager's probes and metrics once had:
	// the manager takes others.
	for _, addr := range []string{"127.0.0.1:9440", "127.0.0.1:8080"} {
		if l, err := net.Listen("tcp", addr); err == nil { // else someone holds it already
			defer func() { _ = l.Close() }()
		}
	}
	identities, err := env.ManagerIdentities(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := manager.New(ctx, identities, manager.Options{
		Components:                   []string{"capi"},
		LeaderElection:               true,
		Home:                         t.TempDir(),
		Version:                      "v0.0.0-test",
		SkipControllerNameValidation: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.ID()).To(Equal("flotilla-manager-capi"))
	healthAddr, metricsAddr := m.ProbeAddress(), m.MetricsAddress()
	g.Expect(healthAddr).To(HavePrefix("127.0.0.1:"))
	g.Expect(metricsAddr).To(HavePrefix("127.0.0.1:"))
	g.Expect([]string{healthAddr, metricsAddr}).NotTo(ContainElements("127.0.0.1:9440", "127.0.0.1:8080"))
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

	t.Run("the metrics endpoint answers over HTTPS only those the API server authorizes", func(t *testing.T) {
		g := NewWithT(t)
		url := fmt.Sprintf("https://%s/metrics", metricsAddr)
		code, _, err := getWithToken(url, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusUnauthorized), "no credentials")
		code, _, err = get(fmt.Sprintf("http://%s/metrics", metricsAddr))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusBadRequest), "plain HTTP")

		stranger := serviceAccountToken(ctx, t, ns, "stranger", false)
		code, _, err = getWithToken(url, stranger)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusForbidden), "a user who may not get /metrics")

		scraper := serviceAccountToken(ctx, t, ns, "scraper", true)
		code, body, err := getWithToken(url, scraper)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK), body)
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
