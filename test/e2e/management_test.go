package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// testManagementCluster checks what issue 2 promises about a management cluster created with
// `flotilla create cluster -f mgmt.yaml`.
func testManagementCluster(t *testing.T, f *fleet) {
	ctx := t.Context()

	t.Run("the workflow printed every phase with its duration", func(t *testing.T) {
		g := NewWithT(t)
		for _, phase := range []string{"SetupAndValidate", "CreateBootstrapCluster", "InstallComponents", "CreateWorkloadCluster",
			"MoveManagement", "InstallComponentsOnManagement", "InstallAddOns", "DeleteBootstrap"} {
			g.Expect(f.createOutput).To(MatchRegexp(`[✓○] %s`, phase))
		}
	})

	t.Run("the cluster manages itself and is Available", func(t *testing.T) {
		g := NewWithT(t)
		capi := &clusterv1.Cluster{}
		g.Eventually(func(g Gomega) {
			g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, capi)).To(Succeed())
			available := meta.FindStatusCondition(capi.Status.Conditions, clusterv1.AvailableCondition)
			g.Expect(available).NotTo(BeNil())
			g.Expect(available.Status).To(Equal(metav1.ConditionTrue), available.Message)
		}, 2*time.Minute, time.Second).Should(Succeed())

		fc := &flotillav1.Cluster{}
		g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, fc)).To(Succeed())
		g.Expect(fc.Spec.Management).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
	})

	t.Run("the manager runs as its own restricted identities, never with the admin kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		mgmtDir := filepath.Join(f.home, "clusters", "mgmt")
		keeper := process.Keeper{RunDir: filepath.Join(mgmtDir, "run"), LogDir: filepath.Join(mgmtDir, "logs")}
		pid, running := keeper.Running("manager")
		g.Expect(running).To(BeTrue())
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		g.Expect(err).NotTo(HaveOccurred())
		args := strings.Split(string(cmdline), "\x00")
		identities := filepath.Join(mgmtDir, "manager", "identities")
		g.Expect(args).To(ContainElements("--identities", identities))
		g.Expect(args).NotTo(ContainElement("--kubeconfig"))

		// The API server refuses each identity what no role of it allows: everything, and for
		// packages the Metal API key's namespace.
		ids, err := config.ManagerIdentities()
		g.Expect(err).NotTo(HaveOccurred())
		for _, id := range ids {
			c, err := client.KubeClient(filepath.Join(identities, id+".kubeconfig"))
			g.Expect(err).NotTo(HaveOccurred())
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"},
			}}
			g.Expect(c.Create(ctx, review)).To(Succeed(), id)
			g.Expect(review.Status.Allowed).To(BeFalse(), "identity %s may do everything", id)
			if id == "packages" {
				err := c.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(infrav1.PacketCredentialsNamespace))
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "packages lists the Secrets of flotilla-system: %v", err)
			}
		}
	})

	t.Run("two simulated worker Nodes are Ready at the cluster's version", func(t *testing.T) {
		g := NewWithT(t)
		nodes := &corev1.NodeList{}
		g.Expect(f.admin.List(ctx, nodes, ctrlclient.MatchingLabels{infrav1.SimulatedNodeLabel: "true"})).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(2))
		for _, n := range nodes.Items {
			g.Expect(n.Spec.ProviderID).To(HavePrefix(infrav1.ProviderIDPrefix))
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal("v1.35.4"))
			ready := false
			for _, cond := range n.Status.Conditions {
				ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
			}
			g.Expect(ready).To(BeTrue(), "node %s is not Ready", n.Name)
		}
	})

	t.Run("the bootstrap cluster is gone", func(t *testing.T) {
		g := NewWithT(t)
		_, err := os.Stat(filepath.Join(f.home, "clusters", "mgmt-bootstrap"))
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "bootstrap data left behind")
	})

	t.Run("describe prints the tree with conditions", func(t *testing.T) {
		g := NewWithT(t)
		var w bytes.Buffer
		g.Expect(client.DescribeCluster(ctx, f.admin, "default", "mgmt", &w)).To(Succeed())
		g.Expect(w.String()).To(ContainSubstring("ControlPlane - LocalControlPlane/mgmt"))
		g.Expect(w.String()).To(ContainSubstring("MachineDeployment/mgmt-md-0"))
		g.Expect(w.String()).To(ContainSubstring("2 Machines: mgmt-md-0-"))
	})

	t.Run("clusterctl describe works against it", func(t *testing.T) {
		g := NewWithT(t)
		out, err := exec.CommandContext(ctx, clusterctlBinary(t), "describe", "cluster", "mgmt", "--kubeconfig", f.kubeconfig).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		g.Expect(string(out)).To(MatchRegexp(`Cluster default/mgmt\s.*True\s+Available`))
		g.Expect(string(out)).To(ContainSubstring("LocalControlPlane default/mgmt"))
		g.Expect(string(out)).To(ContainSubstring("2 Machines"))
	})

	t.Run("a second cluster with the same name is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := f.c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: f.specFile, OutDir: t.TempDir()})
		g.Expect(err).To(MatchError(ContainSubstring("already runs on this machine")))
	})
}

// testManagerRestart kills the manager of mgmt and starts it again: it adopts every control
// plane process (of mgmt and of its workload clusters) instead of starting another.
func testManagerRestart(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	mgmtDir := filepath.Join(f.home, "clusters", "mgmt")
	before := runningPIDs(t, mgmtDir)
	g.Expect(before).To(HaveKey("kube-apiserver"))
	managerPID := before["manager"]
	g.Expect(managerPID).NotTo(BeZero())
	delete(before, "manager")

	g.Expect(syscall.Kill(managerPID, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() bool { return process.Alive(managerPID) }, 10*time.Second).Should(BeFalse())

	g.Expect(f.c.StartManager(ctx, "mgmt")).To(Succeed())
	// The new manager reconciles the control plane again: the Cluster turns Ready for it.
	g.Eventually(func(g Gomega) {
		fc := &flotillav1.Cluster{}
		g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, fc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
	}, 2*time.Minute, time.Second).Should(Succeed())
	time.Sleep(5 * time.Second) // a few more reconciles of the control plane
	after := runningPIDs(t, mgmtDir)
	g.Expect(after["manager"]).NotTo(Equal(managerPID))
	delete(after, "manager")
	g.Expect(after).To(Equal(before), "no control plane process was restarted")
}

// testDeleteManagementCluster deletes mgmt while it still manages a workload cluster: refused
// without --force, and with it every process of both clusters stops and their data is gone.
func testDeleteManagementCluster(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	leftover := writeClusterSpec(t, filepath.Join(f.out, "leftover.yaml"),
		spec.GenerateOptions{Name: "leftover", Provider: spec.ProviderLocal, Workers: 1})
	g.Expect(f.c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: leftover, Kubeconfig: f.kubeconfig, OutDir: f.out})).To(Succeed())

	err := f.c.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: f.out})
	g.Expect(err).To(MatchError(ContainSubstring("still manages workload clusters default/leftover")))

	pids := map[string]int{}
	for _, cluster := range []string{"mgmt", "leftover"} {
		for name, pid := range runningPIDs(t, filepath.Join(f.home, "clusters", cluster)) {
			pids[cluster+"/"+name] = pid
		}
	}
	g.Expect(pids).To(HaveKey("leftover/kube-apiserver"))
	g.Expect(f.c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: f.out, Force: true})).To(Succeed())
	for name, pid := range pids {
		g.Eventually(func() bool { return process.Alive(pid) }, 10*time.Second).Should(BeFalse(), "%s (pid %d) still runs", name, pid)
	}
	entries, err := os.ReadDir(filepath.Join(f.home, "clusters"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "no cluster data is left")
	g.Expect(supervisor.Running(f.home)).To(BeFalse(), "deleting the last cluster stopped the supervisor: no Flotilla process is left")
	_, err = os.Stat(f.kubeconfig)
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}
