package inmemory_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	devv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/values"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/infrastructure/inmemory"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
)

// The tests run a real manager with Cluster API's core, topology and kubeadm controllers, the
// cluster, addons and packages components and the in-memory provider, whose process is this test
// binary (TestMain hands it over to RunProcessIfRequested), against a real kube-apiserver. Clusters are made from the
// spec `flotilla generate clusterconfig --provider inmemory` prints.

var (
	env  *testenv.Environment
	home string
	// c reads the management cluster with the Dev types.
	c ctrlclient.Client
)

const (
	readyTimeout = 3 * time.Minute
	interval     = 200 * time.Millisecond
	// managerVersion is the Flotilla version the manager records, and the CLI's in tests.
	managerVersion = "v0.0.0-inmemory-test"
)

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested()
	inmemory.RunProcessIfRequested()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{})
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
	stop, err := startManager()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startManager starts the manager the tests share, and returns how to stop it (and so the
// provider process).
func startManager() (stop func(), err error) {
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	ctrl.SetLogger(log)
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	if home, err = os.MkdirTemp("", "flotilla-inmemory-test-"); err != nil {
		cancel()
		return nil, err
	}
	executable, err := os.Executable()
	if err != nil {
		cancel()
		return nil, err
	}
	identities, err := env.ManagerIdentities(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	m, err := manager.New(ctx, identities, manager.Options{
		Components:             []string{"capi", "kubeadm", "cluster", "inmemory", "addons", "packages"},
		HealthProbeBindAddress: "0",
		MetricsBindAddress:     "0",
		Home:                   home,
		Executable:             executable,
		Version:                managerVersion,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
		_ = os.RemoveAll(home)
	}
	if err := devv1.AddToScheme(env.Scheme); err != nil {
		stop()
		return nil, err
	}
	if c, err = ctrlclient.New(env.Config, ctrlclient.Options{Scheme: env.Scheme}); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// createCluster applies the spec of an in-memory cluster name, with its ClusterClass, in a new
// namespace, and returns its Cluster.
func createCluster(t *testing.T, g Gomega, name, version string, workers int32) *flotillav1.Cluster {
	t.Helper()
	ns := env.NewNamespace(t)
	data, err := spec.Generate(spec.GenerateOptions{Name: name, Provider: spec.ProviderInMemory, KubernetesVersion: version, Workers: workers})
	g.Expect(err).NotTo(HaveOccurred())
	s, err := spec.Parse(name+".yaml", data)
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range s.Objects {
		obj.SetNamespace(ns)
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		g.Expect(c.Apply(context.Background(), ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner("test"), ctrlclient.ForceOwnership)).To(Succeed())
	}
	return s.Cluster
}

// ensureManagementCluster makes the API server a management cluster to the CLI: it holds the
// Flotilla Cluster "mgmt" that manages itself (paused: nothing runs it; the manager under test
// manages the in-memory clusters).
func ensureManagementCluster(t *testing.T, g Gomega) {
	t.Helper()
	mgmt := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: metav1.NamespaceDefault, Annotations: map[string]string{clusterv1.PausedAnnotation: "true"}},
		Spec: flotillav1.ClusterSpec{
			Management: true, KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "mgmt"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	if err := c.Create(context.Background(), mgmt); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// waitReady waits until the Cluster is Ready and returns how long it took from now.
func waitReady(g Gomega, cl *flotillav1.Cluster) {
	g.Eventually(func(g Gomega) {
		current := &flotillav1.Cluster{}
		g.Expect(c.Get(context.Background(), ctrlclient.ObjectKeyFromObject(cl), current)).To(Succeed())
		ready := meta.FindStatusCondition(current.Status.Conditions, flotillav1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.ObservedGeneration).To(Equal(current.Generation))
	}, readyTimeout, interval).Should(Succeed())
}

// workloadClient is a client of the workload cluster, from its kubeconfig Secret.
func workloadClient(g Gomega, cl *flotillav1.Cluster) (ctrlclient.Client, string) {
	s := &corev1.Secret{}
	g.Expect(c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: cl.Namespace, Name: cl.Name + "-kubeconfig"}, s)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
	g.Expect(err).NotTo(HaveOccurred())
	wc, err := ctrlclient.New(cfg, ctrlclient.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	return wc, strings.TrimPrefix(cfg.Host, "https://")
}

func TestInMemoryClusterLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	cl := createCluster(t, g, "c1", "1.35", 1)
	waitReady(g, cl)
	t.Logf("in-memory cluster with 1 control plane machine and 1 worker Ready after %s", time.Since(start).Round(time.Millisecond))

	t.Run("the workload cluster's API answers with its Nodes", func(t *testing.T) {
		g := NewWithT(t)
		wc, _ := workloadClient(g, cl)
		nodes := &corev1.NodeList{}
		g.Expect(wc.List(ctx, nodes)).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(2))
	})

	t.Run("the endpoint is served on loopback only, to holders of a client certificate", func(t *testing.T) {
		g := NewWithT(t)
		_, address := workloadClient(g, cl)
		host, port, err := net.SplitHostPort(address)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(host).To(Equal("127.0.0.1"))
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // no credentials is what is tested
		resp, err := anonymous.Get("https://" + address + "/api/v1/nodes")                                            //nolint:noctx // a test request
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "a client without a certificate is refused")
		addrs, err := net.InterfaceAddrs()
		g.Expect(err).NotTo(HaveOccurred())
		for _, a := range addrs {
			ip, _, _ := net.ParseCIDR(a.String())
			if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				continue
			}
			_, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), port), time.Second)
			g.Expect(err).To(HaveOccurred(), "the endpoint must not answer on %s", ip)
		}
	})

	t.Run("an upgrade goes through the topology, control plane then workers", func(t *testing.T) {
		g := NewWithT(t)
		current := &flotillav1.Cluster{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), current)).To(Succeed())
		patch := ctrlclient.MergeFrom(current.DeepCopy())
		current.Spec.KubernetesVersion = "1.36"
		g.Expect(c.Patch(ctx, current, patch)).To(Succeed())
		waitReady(g, cl)
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), current)).To(Succeed())
		g.Expect(current.Status.KubernetesVersion).To(Equal("v1.36.3"))
		machines := &clusterv1.MachineList{}
		g.Expect(c.List(ctx, machines, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
		for _, m := range machines.Items {
			if m.DeletionTimestamp.IsZero() {
				g.Expect(m.Spec.Version).To(Equal("v1.36.3"), "Machine %s", m.Name)
			}
		}
	})

	t.Run("deleting the cluster deletes its Cluster API objects and in-memory machines", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, cl)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), &flotillav1.Cluster{}))).To(BeTrue())
			dms := &devv1.DevMachineList{}
			g.Expect(c.List(ctx, dms, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
			g.Expect(dms.Items).To(BeEmpty())
		}, readyTimeout, interval).Should(Succeed())
	})
}

// The provider process is killed while the cluster's machines are being created: the manager
// starts a new one, which picks up where the first left, and nothing is created twice.
func TestKilledProviderProcessDuplicatesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cl := createCluster(t, g, "c2", "1.36", 1)
	g.Eventually(func(g Gomega) {
		dms := &devv1.DevMachineList{}
		g.Expect(c.List(ctx, dms, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
		g.Expect(dms.Items).NotTo(BeEmpty())
	}, readyTimeout, 20*time.Millisecond).Should(Succeed())
	data, err := os.ReadFile(filepath.Clean(inmemory.PIDFile(home)))
	g.Expect(err).NotTo(HaveOccurred())
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())

	waitReady(g, cl)
	g.Eventually(func(g Gomega) {
		data, err := os.ReadFile(inmemory.PIDFile(home))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.TrimSpace(string(data))).NotTo(Equal(strconv.Itoa(pid)), "a new process runs")
	}, readyTimeout, interval).Should(Succeed())
	machines := &clusterv1.MachineList{}
	g.Expect(c.List(ctx, machines, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
	g.Expect(machines.Items).To(HaveLen(2), "one control plane machine, one worker")
	dms := &devv1.DevMachineList{}
	g.Expect(c.List(ctx, dms, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
	g.Expect(dms.Items).To(HaveLen(2))
	wc, _ := workloadClient(g, cl)
	nodes := &corev1.NodeList{}
	g.Expect(wc.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(2))
}
