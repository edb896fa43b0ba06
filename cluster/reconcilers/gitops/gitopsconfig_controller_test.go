package gitops_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/addons/values"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
)

// The tests run the GitOpsConfig reconciler and the cluster component (the Flotilla Cluster
// reconciler and its webhooks) in a real manager (manager.New) against a real kube-apiserver,
// each component as its own restricted identity, on real Git repositories in temporary
// directories: the reconciler applies specs as the applier of the GitOpsConfig's namespace,
// which each test binds to the cluster creator role there as an admin does
// (config.InstallGitOpsApplier). The API server holds one management Cluster, "mgmt" in
// namespace mgmt-system, as a management cluster's API server does; each test syncs its own
// repository into its own namespace.

var env *testenv.Environment

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
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
	home, err := os.MkdirTemp("", "flotilla-gitops-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating the home directory: %v\n", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(home) }()

	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	defer cancel()
	if err := startManager(ctx, home); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	if err := createManagementCluster(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "creating the management Cluster: %v\n", err)
		return 1
	}
	return m.Run()
}

// startManager runs the components cluster and gitops under their identities until ctx ends.
func startManager(ctx context.Context, home string) error {
	identities, err := env.ManagerIdentities(ctx)
	if err != nil {
		return err
	}
	m, err := manager.New(ctx, identities, manager.Options{
		Components:             []string{"cluster", "gitops"},
		HealthProbeBindAddress: "0",
		MetricsBindAddress:     "0",
		Home:                   home,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	_, _, err = testenv.RunManager(ctx, m.Manager(), m.Run, testenv.Readiness{Checks: []func() error{m.Ready}})
	return err
}

// management is the management Cluster every test's GitOpsConfig syncs the directory of.
var management = ctrlclient.ObjectKey{Namespace: "mgmt-system", Name: "mgmt"}

func createManagementCluster(ctx context.Context) error {
	objs := []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: management.Namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: flotillav1.GitOpsCredentialsNamespace}},
		&infrav1.LocalDatacenterConfig{ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: management.Namespace}},
		&flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: management.Name, Namespace: management.Namespace},
			Spec: flotillav1.ClusterSpec{
				Management:        true,
				KubernetesVersion: "1.36",
				DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "mgmt"},
			},
		},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); ctrlclient.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	return nil
}

// workloadSpec is the spec file of workload cluster name in namespace ns with count workers,
// as a user would commit it (or `flotilla create cluster` renders it).
func workloadSpec(ns, name string, count int, datacenter string) []byte {
	return []byte(fmt.Sprintf(`# Workload cluster %[2]s.
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  kubernetesVersion: "1.36"
  datacenterRef:
    kind: LocalDatacenterConfig
    name: %[4]s
  workerNodeGroups:
    - name: md-0
      count: %[3]d
      machineGroupRef:
        kind: LocalMachineConfig
        name: %[2]s-workers
  gitOpsRef:
    kind: GitOpsConfig
    name: fleet
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: %[4]s
  namespace: %[1]s
spec:
  scheduler: false
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalMachineConfig
metadata:
  name: %[2]s-workers
  namespace: %[1]s
spec:
  capacity:
    cpu: "2"
`, ns, name, count, datacenter))
}

// createGitOpsConfig binds the applier of ns to the cluster creator role and creates
// GitOpsConfig "fleet" in ns pulling repository every second, and deletes it when the test
// ends, before the test's repository goes.
func createGitOpsConfig(t *testing.T, g Gomega, ns, repository string, mutate ...func(*flotillav1.GitOpsConfig)) *flotillav1.GitOpsConfig {
	t.Helper()
	g.Expect(config.InstallGitOpsApplier(context.Background(), env.Client, ns)).To(Succeed())
	return createUnboundGitOpsConfig(t, g, ns, repository, mutate...)
}

// createUnboundGitOpsConfig is createGitOpsConfig without binding the applier of ns: an admin
// who forgot to, or whose repository's writers are trusted with nothing.
func createUnboundGitOpsConfig(t *testing.T, g Gomega, ns, repository string, mutate ...func(*flotillav1.GitOpsConfig)) *flotillav1.GitOpsConfig {
	t.Helper()
	gc := newGitOpsConfig(ns, repository)
	for _, m := range mutate {
		m(gc)
	}
	g.Expect(env.Client.Create(context.Background(), gc)).To(Succeed())
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), gc); ctrlclient.IgnoreNotFound(err) != nil {
			t.Errorf("deleting GitOpsConfig %s: %v", gc.Name, err)
		}
	})
	return gc
}

func newGitOpsConfig(ns, repository string) *flotillav1.GitOpsConfig {
	return &flotillav1.GitOpsConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec: flotillav1.GitOpsConfigSpec{
			Repository: repository,
			Interval:   metav1.Duration{Duration: time.Second},
		},
	}
}

// readyOf returns the Ready condition of the GitOpsConfig and its status.
func readyOf(g Gomega, config *flotillav1.GitOpsConfig) (metav1.Condition, flotillav1.GitOpsConfigStatus) {
	current := &flotillav1.GitOpsConfig{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(config), current)).To(Succeed())
	cond := meta.FindStatusCondition(current.Status.Conditions, flotillav1.ReadyCondition)
	g.Expect(cond).NotTo(BeNil(), "the Ready condition")
	return *cond, current.Status
}

// expectWorkers waits until Cluster name in ns asks for count workers and its
// MachineDeployment has count replicas.
func expectWorkers(g Gomega, ns, name string, count int32) {
	g.Eventually(func(g Gomega) {
		c := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
		g.Expect(c.Spec.WorkerNodeGroups).To(HaveLen(1))
		g.Expect(c.Spec.WorkerNodeGroups[0].Count).To(Equal(count))
		md := &clusterv1.MachineDeployment{}
		g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name + "-md-0"}, md)).To(Succeed())
		g.Expect(md.Spec.Replicas).To(Equal(ptr.To(count)))
	}, timeout, interval).Should(Succeed())
}

func TestACommittedSpecIsAppliedAndEachNewCommitSyncs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	dir := t.TempDir()
	_, err := git.PlainInit(dir, true)
	g.Expect(err).NotTo(HaveOccurred())
	// The CLI commits to the repository by path; the management cluster pulls it through a
	// URL, into its cache.
	writer := gitopsrepo.Repository{URL: dir}
	commit := func(g Gomega, spec []byte) string {
		res, err := writer.PutCluster(ctx, "mgmt", "w1", spec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changed).To(BeTrue())
		return res.Commit
	}
	first := commit(g, workloadSpec(ns, "w1", 2, "w1"))
	config := createGitOpsConfig(t, g, ns, "file://"+dir)

	t.Run("the spec is applied and the GitOpsConfig is Ready at its commit", func(t *testing.T) {
		g := NewWithT(t)
		expectWorkers(g, ns, "w1", 2)
		c := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "w1"}, c)).To(Succeed())
		g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"), "the directory's management cluster")
		g.Expect(c.Spec.GitOpsRef).To(Equal(&flotillav1.Ref{Kind: flotillav1.GitOpsConfigKind, Name: "fleet"}))
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "w1-workers"}, &infrav1.LocalMachineConfig{})).To(Succeed())
		g.Eventually(func(g Gomega) {
			ready, status := readyOf(g, config)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			g.Expect(ready.Reason).To(Equal(flotillav1.SyncedReason))
			g.Expect(ready.Message).To(Equal(fmt.Sprintf("Applied commit %s of file://%s (branch main): clusters %s/w1", first[:7], dir, ns)))
			g.Expect(status.LastAppliedCommit).To(Equal(first))
			g.Expect(status.Path).To(Equal("clusters/mgmt"))
			g.Expect(status.Clusters).To(Equal([]string{ns + "/w1"}))
		}, timeout, interval).Should(Succeed())
		expectEvent(g, ns, corev1.EventTypeNormal, "Applied", "Applied commit "+first[:7]+": "+ns+"/w1")
	})

	t.Run("a new commit that changes the worker count scales the cluster", func(t *testing.T) {
		g := NewWithT(t)
		second := commit(g, workloadSpec(ns, "w1", 3, "w1"))
		expectWorkers(g, ns, "w1", 3)
		g.Eventually(func(g Gomega) {
			_, status := readyOf(g, config)
			g.Expect(status.LastAppliedCommit).To(Equal(second))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("an invalid spec is reported naming the file, line and field, and nothing is applied", func(t *testing.T) {
		g := NewWithT(t)
		applied := currentCommit(g, config)
		commit(g, workloadSpec(ns, "w1", -1, "w1"))
		g.Eventually(func(g Gomega) {
			ready, status := readyOf(g, config)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
			g.Expect(ready.Message).To(ContainSubstring(
				`clusters/mgmt/workload-clusters/w1/cluster.yaml:14: document 1 (Cluster "w1"): spec.workerNodeGroups[0].count: -1 is negative`))
			g.Expect(status.LastAppliedCommit).To(Equal(applied))
		}, timeout, interval).Should(Succeed())
		expectEvent(g, ns, corev1.EventTypeWarning, flotillav1.SyncFailedReason, "spec.workerNodeGroups[0].count")
		expectWorkers(g, ns, "w1", 3)
	})

	t.Run("a change the Cluster webhook forbids is reported naming the field", func(t *testing.T) {
		g := NewWithT(t)
		commit(g, workloadSpec(ns, "w1", 3, "elsewhere"))
		g.Eventually(func(g Gomega) {
			ready, _ := readyOf(g, config)
			g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
			g.Expect(ready.Message).To(ContainSubstring("clusters/mgmt/workload-clusters/w1/cluster.yaml: applying Cluster " + ns + "/w1"))
			g.Expect(ready.Message).To(ContainSubstring("spec.datacenterRef: Forbidden: is immutable"))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a commit that fixes the spec syncs again", func(t *testing.T) {
		g := NewWithT(t)
		fixed := commit(g, workloadSpec(ns, "w1", 4, "w1"))
		expectWorkers(g, ns, "w1", 4)
		g.Eventually(func(g Gomega) {
			ready, status := readyOf(g, config)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			g.Expect(status.LastAppliedCommit).To(Equal(fixed))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("nothing is applied while the management cluster is paused", func(t *testing.T) {
		g := NewWithT(t)
		setPaused(g, true)
		defer setPaused(g, false)
		g.Eventually(func(g Gomega) {
			ready, _ := readyOf(g, config)
			g.Expect(ready.Reason).To(Equal(flotillav1.PausedReason))
			g.Expect(ready.Message).To(Equal("Not syncing: management cluster mgmt is paused (cluster.x-k8s.io/paused)"))
		}, timeout, interval).Should(Succeed())
		commit(g, workloadSpec(ns, "w1", 5, "w1"))
		g.Consistently(func(g Gomega) {
			c := &flotillav1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "w1"}, c)).To(Succeed())
			g.Expect(c.Spec.WorkerNodeGroups[0].Count).To(Equal(int32(4)))
		}, 3*time.Second, interval).Should(Succeed())

		setPaused(g, false)
		expectWorkers(g, ns, "w1", 5)
	})

	t.Run("a kubectl change stays until the spec changes in Git", func(t *testing.T) {
		g := NewWithT(t)
		c := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "w1"}, c)).To(Succeed())
		c.Spec.WorkerNodeGroups[0].Count = 1
		g.Expect(env.Client.Update(ctx, c)).To(Succeed())
		// Another cluster's spec changes; w1's file does not, so w1 is not applied again.
		res, err := writer.PutCluster(ctx, "mgmt", "w2", workloadSpec(ns, "w2", 1, "w2"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			_, status := readyOf(g, config)
			g.Expect(status.LastAppliedCommit).To(Equal(res.Commit))
			g.Expect(status.Clusters).To(Equal([]string{ns + "/w1", ns + "/w2"}))
		}, timeout, interval).Should(Succeed())
		expectWorkers(g, ns, "w2", 1)
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "w1"}, c)).To(Succeed())
		g.Expect(c.Spec.WorkerNodeGroups[0].Count).To(Equal(int32(1)))
	})
}

func TestEditingACheckedOutRepositoryAndCommittingScalesTheCluster(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	// The user's own clone of the repository, read by the management cluster by path.
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	g.Expect(err).NotTo(HaveOccurred())
	wt, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	// Named apart from the other tests' w1: cluster names are unique in an API server.
	specPath := "clusters/mgmt/workload-clusters/w-edit/cluster.yaml"
	userCommits := func(g Gomega, spec []byte, message string) string {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, specPath)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, specPath), spec, 0o600)).To(Succeed())
		_, err := wt.Add(specPath)
		g.Expect(err).NotTo(HaveOccurred())
		hash, err := wt.Commit(message, &git.CommitOptions{Author: &object.Signature{Name: "Ops", Email: "ops@example.com", When: time.Now()}})
		g.Expect(err).NotTo(HaveOccurred())
		return hash.String()
	}
	userCommits(g, workloadSpec(ns, "w-edit", 1, "w-edit"), "Add w-edit")
	config := createGitOpsConfig(t, g, ns, dir)
	expectWorkers(g, ns, "w-edit", 1)

	spec := strings.Replace(string(workloadSpec(ns, "w-edit", 1, "w-edit")), "count: 1", "count: 2", 1)
	scaled := userCommits(g, []byte(spec), "Scale w-edit to 2 workers")
	expectWorkers(g, ns, "w-edit", 2)
	g.Eventually(func(g Gomega) {
		_, status := readyOf(g, config)
		g.Expect(status.LastAppliedCommit).To(Equal(scaled))
	}, timeout, interval).Should(Succeed())
}

func TestAMissingCredentialsSecretIsReportedNamingTheField(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	config := createGitOpsConfig(t, g, ns, "https://git.example.com/fleet.git", func(c *flotillav1.GitOpsConfig) {
		c.Spec.SecretRef = &flotillav1.SecretReference{Name: "fleet-git"}
	})
	g.Eventually(func(g Gomega) {
		ready, _ := readyOf(g, config)
		g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
		g.Expect(ready.Message).To(Equal("spec.secretRef.name: Secret flotilla-system/fleet-git not found; create it in flotilla-system, " +
			"or remove secretRef for a repository that needs no credentials"))
	}, timeout, interval).Should(Succeed())
}

func TestTheAPIServerDefaultsAGitOpsConfig(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	config := &flotillav1.GitOpsConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
		Spec:       flotillav1.GitOpsConfigSpec{Repository: "/srv/fleet.git"},
	}
	g.Expect(env.Client.Create(context.Background(), config)).To(Succeed())
	g.Expect(config.Spec.Branch).To(Equal(flotillav1.DefaultGitOpsBranch))
	g.Expect(config.Spec.Interval.Duration).To(Equal(time.Minute))

	bad := &flotillav1.GitOpsConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec:       flotillav1.GitOpsConfigSpec{Repository: "/srv/fleet.git", Interval: metav1.Duration{Duration: -time.Second}},
	}
	err := env.Client.Create(context.Background(), bad)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.interval"))
}

// currentCommit is the GitOpsConfig's last applied commit.
func currentCommit(g Gomega, config *flotillav1.GitOpsConfig) string {
	_, status := readyOf(g, config)
	return status.LastAppliedCommit
}

// setPaused pauses or unpauses the management Cluster.
func setPaused(g Gomega, paused bool) {
	ctx := context.Background()
	c := &flotillav1.Cluster{}
	g.Expect(env.Client.Get(ctx, management, c)).To(Succeed())
	base := c.DeepCopy()
	if paused {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[clusterv1.PausedAnnotation] = "true"
	} else {
		delete(c.Annotations, clusterv1.PausedAnnotation)
	}
	g.Expect(env.Client.Patch(ctx, c, ctrlclient.MergeFrom(base))).To(Succeed())
}

// expectEvent waits for an Event about GitOpsConfig fleet in ns of the type and reason whose
// note contains text.
func expectEvent(g Gomega, ns, eventType, reason, text string) {
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(env.Client.List(context.Background(), list, ctrlclient.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(ContainElement(And(
			HaveField("Regarding.Name", "fleet"),
			HaveField("Type", eventType),
			HaveField("Reason", reason),
			HaveField("Note", ContainSubstring(text)),
		)))
	}, timeout, interval).Should(Succeed())
}
