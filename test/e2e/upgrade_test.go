package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/workflow"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// upgradeName is the workload cluster the upgrade scenario creates. Not w1: the cluster creator
// scenario has a w1 in namespace team-a, and a local control plane's data directory is named
// after its cluster alone.
const upgradeName = "w2"

// testUpgradeWorkloadCluster creates workload cluster w2 at Kubernetes 1.35 with three workers
// from the fleet's management cluster, scales it down, and upgrades it to 1.36 while scaling it
// back up, the way `flotilla upgrade cluster -f w2.yaml --kubeconfig mgmt/mgmt.kubeconfig` does.
// The upgrade is interrupted half-way and resumed from its checkpoint. It deletes w2 at the end.
func testUpgradeWorkloadCluster(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	home, out, mgmtKubeconfig, kc := f.home, t.TempDir(), f.kubeconfig, f.admin
	// A CLI of its own, whose output the scenario reads while it runs.
	progress := &syncBuffer{}
	c := newClient(t, home, &bytes.Buffer{})
	c.Out = progress

	specFor := func(version string, workers int32) string {
		return writeClusterSpec(t, filepath.Join(out, fmt.Sprintf("%s-%s-%d.yaml", upgradeName, version, workers)),
			spec.GenerateOptions{Name: upgradeName, Provider: spec.ProviderLocal, KubernetesVersion: version, Workers: workers})
	}
	upgrade := func(ctx context.Context, file string) error {
		return c.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{File: file, Kubeconfig: mgmtKubeconfig, OutDir: out})
	}

	err := c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: specFor("1.35", 3), Kubeconfig: mgmtKubeconfig, OutDir: out})
	t.Cleanup(func() {
		_ = c.DeleteWorkloadCluster(context.Background(), client.DeleteWorkloadClusterOptions{
			Name: upgradeName, Namespace: "default", Kubeconfig: mgmtKubeconfig, OutDir: out,
		})
		_ = controlplane.Delete(context.Background(), filepath.Join(home, "clusters", upgradeName))
	})
	g.Expect(err).NotTo(HaveOccurred(), progress.String())
	workloadKubeconfig := client.UserKubeconfigPath(out, upgradeName)
	expectWorkload(t, workloadKubeconfig, "v1.35.4", 3)

	t.Run("scaling down from 3 to 2 workers, with the manager killed before, waits for the supervisor to start it again, runs every phase and leaves the cluster unpaused", func(t *testing.T) {
		g := NewWithT(t)
		managerPID := runningPIDs(t, filepath.Join(home, "clusters", "mgmt"))["manager"]
		g.Expect(managerPID).NotTo(BeZero())
		g.Expect(syscall.Kill(managerPID, syscall.SIGKILL)).To(Succeed())
		g.Eventually(func() bool { return process.Alive(managerPID) }, 10*time.Second).Should(BeFalse())

		progress.Reset()
		err := upgrade(ctx, specFor("1.35", 2))
		t.Logf("upgrade output:\n%s", progress.String())
		g.Expect(err).NotTo(HaveOccurred())
		// The supervisor started it again: the upgrade found it running, or waited for it.
		restarted := runningPIDs(t, filepath.Join(home, "clusters", "mgmt"))["manager"]
		g.Expect(restarted).NotTo(BeZero())
		g.Expect(restarted).NotTo(Equal(managerPID))
		for _, phase := range []string{"✓ SetupAndValidate", "✓ PauseReconcile", "✓ UpgradeWorkloadCluster", "✓ UpdateClusterAndGitResources", "✓ ResumeReconcile"} {
			g.Expect(progress.String()).To(ContainSubstring(phase))
		}
		g.Expect(progress.String()).To(ContainSubstring("worker node group md-0: 3 → 2 workers"))
		expectWorkload(t, workloadKubeconfig, "v1.35.4", 2)
		expectRunning(t, kc)
	})

	t.Run("an unchanged spec changes nothing, and resumes a pause a killed upgrade left behind", func(t *testing.T) {
		g := NewWithT(t)
		pauseAsAKilledUpgradeWould(t, kc)
		generation := clusterGeneration(t, kc)
		progress.Reset()
		err := upgrade(ctx, specFor("1.35", 2))
		t.Logf("upgrade output:\n%s", progress.String())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(progress.String()).To(ContainSubstring("Nothing to change"))
		g.Expect(progress.String()).To(ContainSubstring("○ PauseReconcile skipped: nothing to change"))
		g.Expect(progress.String()).To(ContainSubstring("✓ ResumeReconcile"))
		g.Expect(clusterGeneration(t, kc)).To(Equal(generation))
		expectRunning(t, kc)
	})

	t.Run("1.35 to 1.36 with 3 workers: control plane first, workers one at a time, the API up but for the restart", func(t *testing.T) {
		g := NewWithT(t)
		file := specFor("1.36", 3)
		watch := watchWorkload(t, kc, workloadKubeconfig)

		// Interrupt the first run once the control plane runs 1.36, as Ctrl-C would.
		progress.Reset()
		start := time.Now()
		runCtx, cancel := context.WithCancel(ctx)
		go func() {
			defer cancel()
			_ = waitFor(runCtx, func() bool { return strings.Contains(progress.String(), "control plane v1.36.3 ·") })
		}()
		err := upgrade(runCtx, file)
		cancel()
		t.Logf("interrupted upgrade output:\n%s", progress.String())
		var perr *workflow.PhaseError
		g.Expect(errors.As(err, &perr)).To(BeTrue(), "want a PhaseError, got %v", err)
		g.Expect(perr.Phase).To(Equal("UpgradeWorkloadCluster"))
		g.Expect(perr.CheckpointPath).To(BeAnExistingFile())
		g.Expect(progress.String()).To(ContainSubstring("✓ ResumeReconcile"))
		expectRunning(t, kc)

		progress.Reset()
		err = upgrade(ctx, file)
		took := time.Since(start)
		t.Logf("resumed upgrade output:\n%s", progress.String())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(progress.String()).To(ContainSubstring("Resuming upgrade-workload-cluster"))
		g.Expect(progress.String()).To(ContainSubstring("○ PauseReconcile already done (checkpoint)"))
		g.Expect(perr.CheckpointPath).NotTo(BeAnExistingFile())

		seen := watch.stop()
		t.Logf("upgrade 1.35 → 1.36 with 3 workers took %s (target ≤ 90s); workload API unavailable for %s within a window of %s; at most %d machines at once",
			took.Round(100*time.Millisecond), seen.down.Round(100*time.Millisecond), seen.downWindow().Round(100*time.Millisecond), seen.maxMachines)
		if took > 90*time.Second {
			t.Logf("WARNING: the upgrade took longer than the 90 s target")
		}
		expectWorkload(t, workloadKubeconfig, "v1.36.3", 3)
		expectRunning(t, kc)
		g.Expect(seen.maxMachines).To(BeNumerically("<=", 4), "maxSurge 1 allows one machine over 3")
		g.Expect(seen.downWindow()).To(BeNumerically("<", 15*time.Second), "the workload API was down outside the control plane restart")
		g.Expect(seen.upAfterDown).To(BeTrue(), "the workload API never came back")
	})

	t.Run("a downgrade is refused with the management cluster's reason and leaves nothing behind", func(t *testing.T) {
		g := NewWithT(t)
		generation := clusterGeneration(t, kc)
		progress.Reset()
		err := upgrade(ctx, specFor("1.35", 3))
		t.Logf("upgrade output:\n%s", progress.String())
		g.Expect(err).To(MatchError(ContainSubstring("downgrades are not supported")))
		g.Expect(progress.String()).NotTo(ContainSubstring("PauseReconcile"))
		g.Expect(filepath.Join(out, upgradeName, ".upgrade-checkpoint.json")).NotTo(BeAnExistingFile())
		g.Expect(clusterGeneration(t, kc)).To(Equal(generation))
		expectRunning(t, kc)
	})
}

// expectWorkload checks, through the workload cluster's own kubeconfig, that kube-apiserver
// reports version and that exactly workers simulated Nodes run version and are Ready.
func expectWorkload(t *testing.T, kubeconfig, version string, workers int) {
	t.Helper()
	g := NewWithT(t)
	cfg, err := client.RESTConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	info, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.GitVersion).To(HavePrefix(version))

	wc, err := client.KubeClient(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	// The controllers delete a replaced Machine's Node right after the Machine; allow for it.
	g.Eventually(func(g Gomega) {
		nodes := &corev1.NodeList{}
		g.Expect(wc.List(t.Context(), nodes, ctrlclient.MatchingLabels{infrav1.SimulatedNodeLabel: "true"})).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(workers))
		for _, n := range nodes.Items {
			g.Expect(n.Status.NodeInfo.KubeletVersion).To(Equal(version), "node %s", n.Name)
			ready := false
			for _, cond := range n.Status.Conditions {
				ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
			}
			g.Expect(ready).To(BeTrue(), "node %s is not Ready", n.Name)
		}
	}, 20*time.Second, 500*time.Millisecond).Should(Succeed())
}

// expectRunning checks that the upgrade scenario's cluster is reconciled: no pause annotation, the Paused condition False,
// the CAPI Cluster not paused, and Ready for its current generation.
func expectRunning(t *testing.T, kc ctrlclient.Client) {
	t.Helper()
	g := NewWithT(t)
	key := ctrlclient.ObjectKey{Namespace: "default", Name: upgradeName}
	g.Eventually(func(g Gomega) {
		fc := &flotillav1.Cluster{}
		g.Expect(kc.Get(t.Context(), key, fc)).To(Succeed())
		g.Expect(fc.Annotations).NotTo(HaveKey(clusterv1.PausedAnnotation))
		g.Expect(meta.IsStatusConditionFalse(fc.Status.Conditions, flotillav1.PausedCondition)).To(BeTrue())
		g.Expect(fc.Status.ObservedGeneration).To(Equal(fc.Generation))
		capi := &clusterv1.Cluster{}
		g.Expect(kc.Get(t.Context(), key, capi)).To(Succeed())
		g.Expect(ptr.Deref(capi.Spec.Paused, false)).To(BeFalse())
	}, 10*time.Second, 250*time.Millisecond).Should(Succeed())
}

// pauseAsAKilledUpgradeWould puts the pause annotation an upgrade sets on the cluster, as an upgrade
// killed before ResumeReconcile leaves it.
func pauseAsAKilledUpgradeWould(t *testing.T, kc ctrlclient.Client) {
	t.Helper()
	fc := &flotillav1.Cluster{}
	if err := kc.Get(t.Context(), ctrlclient.ObjectKey{Namespace: "default", Name: upgradeName}, fc); err != nil {
		t.Fatal(err)
	}
	before := fc.DeepCopy()
	if fc.Annotations == nil {
		fc.Annotations = map[string]string{}
	}
	fc.Annotations[clusterv1.PausedAnnotation] = "flotilla-upgrade"
	if err := kc.Patch(t.Context(), fc, ctrlclient.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

func clusterGeneration(t *testing.T, kc ctrlclient.Client) int64 {
	t.Helper()
	fc := &flotillav1.Cluster{}
	if err := kc.Get(t.Context(), ctrlclient.ObjectKey{Namespace: "default", Name: upgradeName}, fc); err != nil {
		t.Fatal(err)
	}
	return fc.Generation
}

// workloadWatch records, while an upgrade runs, when the workload API did not answer /readyz
// and how many of the cluster's Machines existed at once.
type workloadWatch struct {
	done chan struct{}
	wg   sync.WaitGroup
	seen watched
}

type watched struct {
	// down is how long /readyz failed in total; firstDown and lastDown bound the failures.
	down                time.Duration
	firstDown, lastDown time.Time
	// upAfterDown is true when /readyz answered after its last failure.
	upAfterDown bool
	maxMachines int
}

// downWindow is the time from the first failure of /readyz to the last.
func (w watched) downWindow() time.Duration {
	if w.firstDown.IsZero() {
		return 0
	}
	return w.lastDown.Sub(w.firstDown)
}

func watchWorkload(t *testing.T, kc ctrlclient.Client, kubeconfig string) *workloadWatch {
	t.Helper()
	cfg, err := client.RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = time.Second
	w := &workloadWatch{done: make(chan struct{})}
	w.seen.upAfterDown = true
	w.wg.Go(func() {
		const interval = 250 * time.Millisecond
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			now := time.Now()
			resp, err := httpClient.Get(cfg.Host + "/readyz")
			up := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				_ = resp.Body.Close()
			}
			if up {
				w.seen.upAfterDown = true
			} else {
				w.seen.down += interval
				w.seen.upAfterDown = false
				if w.seen.firstDown.IsZero() {
					w.seen.firstDown = now
				}
				w.seen.lastDown = now
			}
			machines := &clusterv1.MachineList{}
			if kc.List(context.Background(), machines, ctrlclient.InNamespace("default"), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: upgradeName}) == nil {
				w.seen.maxMachines = max(w.seen.maxMachines, len(machines.Items))
			}
		}
	})
	return w
}

// stop ends the watch and returns what it saw.
func (w *workloadWatch) stop() watched {
	close(w.done)
	w.wg.Wait()
	return w.seen
}

// waitFor polls cond until it is true or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// syncBuffer is a bytes.Buffer that the workflow writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
