package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/spec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// TestManagementCluster creates a local management cluster the way `make quickstart` does and
// checks what issue 2 promises about it, then deletes it and checks nothing is left.
func TestManagementCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	home, out := t.TempDir(), t.TempDir()

	specFile := filepath.Join(out, "mgmt.yaml")
	generated, err := spec.Generate(spec.GenerateOptions{Name: "mgmt", Provider: "local", Management: true, Workers: 2})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(specFile, generated, 0o600)).To(Succeed())

	var progress bytes.Buffer
	c := newClient(t, home, &progress)

	start := time.Now()
	err = c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: specFile, OutDir: out})
	t.Logf("create output:\n%s", progress.String())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("management cluster Ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		_ = c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: out, Force: true})
	})

	kubeconfig := client.UserKubeconfigPath(out, "mgmt")
	kc, err := client.KubeClient(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("the workflow printed every phase with its duration", func(t *testing.T) {
		g := NewWithT(t)
		for _, phase := range []string{"SetupAndValidate", "CreateBootstrapCluster", "InstallComponents", "CreateWorkloadCluster",
			"MoveManagement", "InstallComponentsOnManagement", "InstallAddOns", "DeleteBootstrap"} {
			g.Expect(progress.String()).To(ContainSubstring(phase))
		}
	})

	t.Run("the cluster manages itself and is Available", func(t *testing.T) {
		g := NewWithT(t)
		capi := &clusterv1.Cluster{}
		g.Eventually(func(g Gomega) {
			g.Expect(kc.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, capi)).To(Succeed())
			available := meta.FindStatusCondition(capi.Status.Conditions, clusterv1.AvailableCondition)
			g.Expect(available).NotTo(BeNil())
			g.Expect(available.Status).To(Equal(metav1.ConditionTrue), available.Message)
		}, 2*time.Minute, time.Second).Should(Succeed())

		fc := &flotillav1.Cluster{}
		g.Expect(kc.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, fc)).To(Succeed())
		g.Expect(fc.Spec.Management).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
	})

	t.Run("two simulated worker Nodes are Ready", func(t *testing.T) {
		g := NewWithT(t)
		nodes := &corev1.NodeList{}
		g.Expect(kc.List(ctx, nodes, ctrlclient.MatchingLabels{infrav1.SimulatedNodeLabel: "true"})).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(2))
		for _, n := range nodes.Items {
			g.Expect(n.Spec.ProviderID).To(HavePrefix(infrav1.ProviderIDPrefix))
			ready := false
			for _, cond := range n.Status.Conditions {
				ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
			}
			g.Expect(ready).To(BeTrue(), "node %s is not Ready", n.Name)
		}
	})

	t.Run("the bootstrap cluster is gone", func(t *testing.T) {
		g := NewWithT(t)
		_, err := os.Stat(filepath.Join(home, "clusters", "mgmt-bootstrap"))
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "bootstrap data left behind")
	})

	t.Run("describe prints the tree with conditions", func(t *testing.T) {
		g := NewWithT(t)
		var w bytes.Buffer
		g.Expect(client.DescribeCluster(ctx, kc, "default", "mgmt", &w)).To(Succeed())
		g.Expect(w.String()).To(ContainSubstring("ControlPlane - LocalControlPlane/mgmt"))
		g.Expect(w.String()).To(ContainSubstring("MachineDeployment/mgmt-md-0"))
	})

	t.Run("clusterctl describe works against it", func(t *testing.T) {
		g := NewWithT(t)
		out, err := exec.CommandContext(ctx, clusterctlBinary(t), "describe", "cluster", "mgmt", "--kubeconfig", kubeconfig).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		g.Expect(string(out)).To(MatchRegexp(`Cluster default/mgmt\s.*True\s+Available`))
		g.Expect(string(out)).To(ContainSubstring("LocalControlPlane default/mgmt"))
		g.Expect(string(out)).To(ContainSubstring("2 Machines"))
	})

	t.Run("a second cluster with the same name is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: specFile, OutDir: t.TempDir()})
		g.Expect(err).To(MatchError(ContainSubstring("already runs on this machine")))
	})

	t.Run("a restarted manager restarts no control plane process", func(t *testing.T) {
		g := NewWithT(t)
		before := controlPlanePIDs(t, filepath.Join(home, "clusters", "mgmt"))
		g.Expect(before).To(HaveKey("kube-apiserver"))
		managerPID := readPID(t, filepath.Join(home, "clusters", "mgmt"), "manager")
		g.Expect(syscall.Kill(managerPID, syscall.SIGKILL)).To(Succeed())
		g.Eventually(func() bool { return process.Alive(managerPID) }, 10*time.Second).Should(BeFalse())

		g.Expect(c.StartManager(ctx, "mgmt")).To(Succeed())
		// Give the new manager time to reconcile the control plane at least once.
		g.Eventually(func(g Gomega) {
			g.Expect(c.ManagerReady(ctx, "mgmt")).To(Succeed())
		}, time.Minute, time.Second).Should(Succeed())
		time.Sleep(5 * time.Second)
		g.Expect(controlPlanePIDs(t, filepath.Join(home, "clusters", "mgmt"))).To(Equal(before))
	})

	t.Run("delete leaves no process and no data", func(t *testing.T) {
		g := NewWithT(t)
		pids := controlPlanePIDs(t, filepath.Join(home, "clusters", "mgmt"))
		pids["manager"] = readPID(t, filepath.Join(home, "clusters", "mgmt"), "manager")
		g.Expect(c.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: out})).To(Succeed())
		for name, pid := range pids {
			g.Expect(process.Alive(pid)).To(BeFalse(), "%s (pid %d) still runs", name, pid)
		}
		_, err := os.Stat(filepath.Join(home, "clusters", "mgmt"))
		g.Expect(os.IsNotExist(err)).To(BeTrue())
		_, err = os.Stat(kubeconfig)
		g.Expect(os.IsNotExist(err)).To(BeTrue())
	})
}

// newClient returns a client whose manager processes run the flotilla binary built for this test
// run, using the machine's control plane binaries.
func newClient(t *testing.T, home string, out *bytes.Buffer) *client.Client {
	t.Helper()
	c, err := client.New(home, binaries.DefaultRoot(), out)
	if err != nil {
		t.Fatal(err)
	}
	c.Executable = flotillaBinary(t)
	c.WaitTimeout = 3 * time.Minute
	return c
}

// flotillaBinary builds cmd/flotilla once per test binary.
func flotillaBinary(t *testing.T) string {
	t.Helper()
	if builtBinary != "" {
		return builtBinary
	}
	dir, err := os.MkdirTemp("", "flotilla-e2e-bin")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "flotilla")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/flotilla-dev/flotilla/cmd/flotilla")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building flotilla: %v\n%s", err, out)
	}
	builtBinary = bin
	return bin
}

var builtBinary string

// clusterctlBinary is CAPI's clusterctl, which `make test` builds into the tools cache.
func clusterctlBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CLUSTERCTL")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(home, ".cache", "flotilla", "tools", "clusterctl-v1.14.2")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("clusterctl is missing at %s: build it with `make %s` (make test does)", path, path)
	}
	return path
}

// controlPlanePIDs reads the pid files of a cluster's control plane processes.
func controlPlanePIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	entries, err := os.ReadDir(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".pid")
		if name == e.Name() || name == "manager" {
			continue
		}
		pids[name] = readPID(t, dir, name)
	}
	return pids
}

// readPID returns the pid of a running process of the cluster whose data is in dir.
func readPID(t *testing.T, dir, name string) int {
	t.Helper()
	s := process.Supervisor{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
	pid, ok := s.Running(name)
	if !ok {
		t.Fatalf("%s of %s does not run", name, dir)
	}
	return pid
}
