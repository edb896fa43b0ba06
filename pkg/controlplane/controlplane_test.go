package controlplane_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

const testVersion = "v1.36.3"

// realBinaries returns the control plane binaries, failing (not skipping) with the build command
// when they are missing.
func realBinaries(t *testing.T) binaries.Set {
	t.Helper()
	set, err := binaries.Find(binaries.DefaultRoot(), testVersion)
	if err != nil {
		t.Fatalf("the control plane integration tests run real binaries: %v", err)
	}
	return set
}

// fakeBinaries returns a Set of executable files that are never run.
func fakeBinaries(t *testing.T) binaries.Set {
	t.Helper()
	dir := filepath.Join(t.TempDir(), testVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range binaries.Names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return binaries.Set{Dir: dir, Version: testVersion}
}

// testContext returns a context whose logger writes to the test's log.
func testContext(t *testing.T) context.Context {
	return ctrl.LoggerInto(context.Background(), testr.New(t))
}

// quietContext is for cleanups, which may run after the test's log is closed.
func quietContext() context.Context {
	return ctrl.LoggerInto(context.Background(), logr.Discard())
}

func pids(st *controlplane.Status) map[string]int {
	m := map[string]int{}
	for _, p := range st.Processes {
		m[p.Name] = p.PID
	}
	return m
}

func adopted(st *controlplane.Status) map[string]bool {
	m := map[string]bool{}
	for _, p := range st.Processes {
		m[p.Name] = p.Adopted
	}
	return m
}

func modTimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]time.Time{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = info.ModTime()
	}
	return m
}

func TestControlPlaneLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cfg := controlplane.Config{
		Name:              "lifecycle",
		Dir:               controlplane.ClusterDir(t.TempDir(), "lifecycle"),
		Binaries:          realBinaries(t),
		ControllerManager: true,
		Scheduler:         true,
		Kwok:              true,
	}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })

	// Ensure starts everything and the API server becomes ready.
	start := time.Now()
	first, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())
	t.Logf("Ensure -> ready in %.1fs", time.Since(start).Seconds())
	g.Expect(first.Processes).To(HaveLen(5))
	g.Expect(adopted(first)).To(HaveEach(BeFalse()))
	g.Expect(first.Port).NotTo(BeZero())
	g.Expect(first.CA.Cert.IsCA).To(BeTrue())
	version, err := controlplane.Ready(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(version).To(Equal(testVersion))

	// The admin kubeconfig reaches the API server.
	kubeconfig, err := controlplane.AdminKubeconfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(restConfig.Host).To(Equal(first.Server))
	client, err := kubernetes.NewForConfig(restConfig)
	g.Expect(err).NotTo(HaveOccurred())
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, ns := range namespaces.Items {
		names = append(names, ns.Name)
	}
	g.Expect(names).To(ContainElements("default", "kube-system"))

	// Ensure again adopts everything: no process started, no file of the PKI rewritten.
	pkiBefore := modTimes(t, filepath.Join(cfg.Dir, "pki"))
	start = time.Now()
	second, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("Ensure with everything running took %s", time.Since(start))
	g.Expect(pids(second)).To(Equal(pids(first)))
	g.Expect(adopted(second)).To(HaveEach(BeTrue()))
	g.Expect(second.Port).To(Equal(first.Port))
	g.Expect(modTimes(t, filepath.Join(cfg.Dir, "pki"))).To(Equal(pkiBefore))

	// kwok makes an annotated Node Ready, leaves other Nodes alone, and plays the Pods of a
	// Deployment scheduled onto its Node until the Deployment is Available.
	fake := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "worker-0",
		Labels:      map[string]string{infrav1.SimulatedNodeLabel: "true"},
		Annotations: map[string]string{infrav1.KwokNodeAnnotation: controlplane.KwokNodeAnnotationValue},
	}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-for-kwok"}}
	for _, n := range []*corev1.Node{fake, other} {
		_, err = client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	start = time.Now()
	g.Eventually(func(g Gomega) {
		n, err := client.CoreV1().Nodes().Get(ctx, fake.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("kwok Node Ready in %.1fs", time.Since(start).Seconds())
	n, err := client.CoreV1().Nodes().Get(ctx, other.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Status.Conditions).To(BeEmpty(), "kwok manages only annotated Nodes")

	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{infrav1.SimulatedNodeLabel: "true"},
					Containers:   []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
				},
			},
		},
	}
	start = time.Now()
	_, err = client.AppsV1().Deployments("default").Create(ctx, deployment, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(2)))
		g.Expect(d.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable), HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("Deployment Available in %.1fs", time.Since(start).Seconds())

	// A killed API server is started again by the supervisor of the home, from its record, on the
	// same endpoint, and etcd (the data) is left alone. Nothing else is called.
	home := filepath.Dir(filepath.Dir(cfg.Dir))
	superCtx, stopSupervisor := context.WithCancel(ctx)
	supervised := make(chan error, 1)
	go func() {
		supervised <- supervisor.Run(superCtx, supervisor.Options{Home: home, Dirs: []string{controlplane.ClusterDir(home, "*")}})
	}()
	defer func() {
		stopSupervisor()
		g.Expect(<-supervised).To(Succeed())
	}()
	apiserver := pids(first)[binaries.KubeAPIServer]
	g.Expect(syscall.Kill(apiserver, syscall.SIGKILL)).To(Succeed())
	start = time.Now()
	g.Eventually(func() error { _, err := controlplane.Ready(ctx, cfg); return err }).
		WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("kube-apiserver killed -> ready again in %.1fs", time.Since(start).Seconds())
	third, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	restarted := third.Processes[1]
	g.Expect(restarted.Name).To(Equal(binaries.KubeAPIServer))
	g.Expect(restarted.PID).NotTo(Equal(apiserver))
	g.Expect(restarted.History.Restarts).To(Equal(1))
	g.Expect(restarted.History.LastExit).To(Equal("signal: killed"), "the supervisor runs in the program that started it")
	g.Expect(pids(third)[binaries.Etcd]).To(Equal(pids(first)[binaries.Etcd]))
	g.Expect(adopted(third)).To(HaveEach(BeTrue()))
	g.Expect(adopted(third)).To(HaveLen(len(binaries.Names)), "every process runs")
	g.Expect(third.Port).To(Equal(first.Port))

	// The restarted API server serves the same data: kwok's Node is there, still Ready.
	g.Eventually(func(g Gomega) {
		n, err := client.CoreV1().Nodes().Get(ctx, fake.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Delete leaves no process and no directory.
	start = time.Now()
	g.Expect(controlplane.Delete(ctx, cfg.Dir)).To(Succeed())
	t.Logf("Delete took %.1fs", time.Since(start).Seconds())
	for name, pid := range pids(third) {
		g.Expect(process.Alive(pid)).To(BeFalse(), name)
	}
	g.Expect(cfg.Dir).NotTo(BeADirectory())
}

func TestEnsureRefusesAnAPIServerPortInUse(t *testing.T) {
	g := NewWithT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	cfg := controlplane.Config{
		Name:          "busy",
		Dir:           controlplane.ClusterDir(t.TempDir(), "busy"),
		Binaries:      fakeBinaries(t),
		APIServerPort: int32(port),
	}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) }) // its egress rules

	_, err = controlplane.Ensure(testContext(t), cfg)
	g.Expect(err).To(MatchError(ContainSubstring("127.0.0.1:" + strconv.Itoa(port) + " is in use by another program")))
	pidFiles, err := filepath.Glob(filepath.Join(cfg.Dir, "run", "*.pid"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pidFiles).To(BeEmpty(), "nothing was started")
}

func TestWaitReadyReportsAProcessThatExited(t *testing.T) {
	g := NewWithT(t)
	set := fakeBinaries(t)
	g.Expect(os.WriteFile(set.Path(binaries.Etcd), []byte("#!/bin/sh\necho 'etcdmain: listen tcp 127.0.0.1:2379: bind: address already in use' >&2\nexit 1\n"), 0o755)).To(Succeed())
	cfg := controlplane.Config{Name: "crashing", Dir: controlplane.ClusterDir(t.TempDir(), "crashing"), Binaries: set}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()

	_, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	// WaitReady starts it again, as the supervisor would, until it crash loops: after the
	// third exit in a row (1 s and 2 s of back-off), not after 30 s.
	start := time.Now()
	err = controlplane.WaitReady(ctx, cfg)
	g.Expect(err).To(MatchError(ContainSubstring("etcd of crashing keeps exiting (3 times in a row, last: exit status 1)")))
	g.Expect(err.Error()).To(ContainSubstring("bind: address already in use"))
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "WaitReady returned early")
}

func TestEnsureNamesTheBuildCommandWhenABinaryIsMissing(t *testing.T) {
	g := NewWithT(t)
	set := fakeBinaries(t)
	g.Expect(os.Remove(set.Path(binaries.Kwok))).To(Succeed())
	cfg := controlplane.Config{Name: "nobin", Dir: t.TempDir(), Binaries: set, Kwok: true}

	_, err := controlplane.Ensure(testContext(t), cfg)
	g.Expect(err).To(MatchError(binaries.ErrMissing))
	g.Expect(err.Error()).To(ContainSubstring("run: flotilla binaries build v1.36.3"))
}

func TestConfigIsValidated(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*controlplane.Config)
		wantErr string
	}{
		{name: "an upper case name is refused", mutate: func(c *controlplane.Config) { c.Name = "Demo" }, wantErr: "lower case DNS name"},
		{name: "a host name instead of an address is refused", mutate: func(c *controlplane.Config) { c.Host = "localhost" }, wantErr: "must be the IP address"},
		{name: "a malformed service range is refused", mutate: func(c *controlplane.Config) { c.ServiceClusterIPRange = "10.96.0.0" }, wantErr: "service range"},
		{name: "missing binaries are refused", mutate: func(c *controlplane.Config) { c.Binaries = binaries.Set{} }, wantErr: "binaries.Find"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg := controlplane.Config{Name: "demo", Dir: t.TempDir(), Binaries: fakeBinaries(t)}
			tt.mutate(&cfg)
			_, err := controlplane.Ensure(testContext(t), cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestDeleteRefusesADirectoryThatIsNoControlPlane(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o600)).To(Succeed())

	g.Expect(controlplane.Delete(testContext(t), dir)).To(MatchError(ContainSubstring("refusing to delete")))
	g.Expect(filepath.Join(dir, "precious")).To(BeAnExistingFile())
}

func TestHomeAndClusterDirs(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(controlplane.HomeEnv, "/data/flotilla")
	g.Expect(controlplane.HomeDir()).To(Equal("/data/flotilla"))
	g.Expect(controlplane.ClusterDir(controlplane.HomeDir(), "demo")).To(Equal("/data/flotilla/clusters/demo"))
	t.Setenv(controlplane.HomeEnv, "")
	t.Setenv("HOME", "/home/someone")
	g.Expect(controlplane.HomeDir()).To(Equal("/home/someone/.flotilla"))
}
