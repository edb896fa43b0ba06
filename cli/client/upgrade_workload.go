package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/workflow"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// Upgrading a workload cluster.
//
// The management cluster's controllers do the upgrade; the CLI changes the spec, lets them roll
// it out and waits. A pause of the Flotilla Cluster (cluster.x-k8s.io/paused) stops its reconciler
// and, through the CAPI Cluster's spec.paused, CAPI's controllers and the local provider: nothing
// can roll out while it is on. So the pause brackets only the moment the new spec is written:
//
//	SetupAndValidate              the cluster exists, is a workload cluster of this management
//	                              cluster and is not paused by someone else; a server-side dry run
//	                              of the spec (the webhook's verdict) says what changes; nothing
//	                              changes: say so and stop, nothing is paused
//	PauseReconcile                cluster.x-k8s.io/paused on the Flotilla Cluster, until the
//	                              controller reports it paused and the CAPI Cluster is paused
//	UpgradeWorkloadCluster        the new spec (configs, then the Cluster) is applied while paused,
//	                              the pause is lifted, and the controller rolls the change out in
//	                              one go: control plane first, then workers one at a time; this
//	                              waits until the control plane reports the new version, every
//	                              Machine is at it and Ready, and the Cluster is Ready for the new
//	                              generation
//	UpdateClusterAndGitResources  the spec is applied once more (a no-op unless someone changed it
//	                              meanwhile, in which case that is waited for too), and committed
//	                              to Git (commitToGit: the hook GitOps fills in)
//	ResumeReconcile               (always, also after a failure or an interrupt) no pause of ours
//	                              is left on the Cluster, and the controller reports it running
//
// A failed or interrupted run leaves a checkpoint in <out>/<name>/.upgrade-checkpoint.json; the
// same command resumes after the last completed phase. The rollout goes on in the management
// cluster while no CLI watches, so a resumed run mostly waits.

// UpgradeWorkloadClusterOptions says which workload cluster to upgrade, to what, and through
// which management cluster.
type UpgradeWorkloadClusterOptions struct {
	// File is the cluster's new spec.
	File string
	// Kubeconfig is the management cluster's kubeconfig.
	Kubeconfig string
	// OutDir holds <name>/, where an interrupted upgrade keeps its checkpoint (the directory
	// create wrote <name>/<name>.kubeconfig to). Default: the current directory.
	OutDir string
}

// Upgrade phases, as the output and checkpoints name them.
const (
	phaseSetupAndValidate             = "SetupAndValidate"
	phasePauseReconcile               = "PauseReconcile"
	phaseUpgradeWorkloadCluster       = "UpgradeWorkloadCluster"
	phaseUpdateClusterAndGitResources = "UpdateClusterAndGitResources"
	phaseResumeReconcile              = "ResumeReconcile"
)

// upgradePausedBy is the value of the cluster.x-k8s.io/paused annotation an upgrade sets, so
// that a later run tells its own pause (left by a killed run) from someone else's.
const upgradePausedBy = "flotilla-upgrade"

// Bounds of the short waits of an upgrade; the rollout is bounded by Client.WaitTimeout.
const (
	pauseTimeout  = time.Minute
	resumeTimeout = time.Minute
)

// upgradeRun is the state the phases of one upgrade share. The exported fields are saved with a
// checkpoint: a resumed run skips SetupAndValidate and finds them there.
type upgradeRun struct {
	c    *Client
	opts UpgradeWorkloadClusterOptions
	spec *spec.Spec
	kc   ctrlclient.Client

	// Plan is what the upgrade changes, as SetupAndValidate found it.
	Plan *upgradePlan `json:"plan,omitempty"`
	// MayBePaused is set once this run (or an interrupted one before it) may have left the
	// pause on the Cluster; ResumeReconcile runs only then.
	MayBePaused bool `json:"mayBePaused,omitempty"`
}

// upgradeWorkflow upgrades and scales a workload cluster through its management cluster.
var upgradeWorkflow = &workflow.Workflow[upgradeRun]{
	Name: "upgrade-workload-cluster",
	Phases: []workflow.Phase[upgradeRun]{
		{Name: phaseSetupAndValidate, Run: setupAndValidateUpgrade},
		{Name: phasePauseReconcile, Run: pauseReconcile, Skip: skipNothingToChange},
		{Name: phaseUpgradeWorkloadCluster, Run: upgradeWorkloadCluster, Skip: skipNothingToChange},
		{Name: phaseUpdateClusterAndGitResources, Run: updateClusterAndGitResources, Skip: skipNothingToChange},
		{Name: phaseResumeReconcile, Run: resumeReconcile, Skip: skipNotPaused, Always: true},
	},
}

// UpgradeWorkloadCluster changes the workload cluster of opts.File to match it, through the
// management cluster behind opts.Kubeconfig: worker counts go up or down, and the Kubernetes
// version one minor up, the control plane first and then the workers one at a time. It waits
// until the change is rolled out. A spec that changes nothing ends here without pausing anything.
func (c *Client) UpgradeWorkloadCluster(ctx context.Context, opts UpgradeWorkloadClusterOptions) error {
	if opts.OutDir == "" {
		opts.OutDir = "."
	}
	if opts.Kubeconfig == "" {
		return errors.New("upgrading a workload cluster needs the kubeconfig of its management cluster, such as --kubeconfig mgmt/mgmt.kubeconfig")
	}
	s, err := loadSpec(opts.File, false, "upgrade it without --kubeconfig (`flotilla upgrade cluster -f "+opts.File+"`)")
	if err != nil {
		return err
	}
	kc, err := KubeClient(opts.Kubeconfig)
	if err != nil {
		return err
	}
	if err := c.CheckCompatibility(ctx, kc, opts.Kubeconfig, Mutating); err != nil {
		return err
	}
	fingerprint, err := workflow.Fingerprint(s.Objects, opts.Kubeconfig)
	if err != nil {
		return err
	}
	stopWatch, err := c.ensureManagerOf(ctx, kc, opts.Kubeconfig, s.Cluster.Namespace)
	if err != nil {
		return err
	}
	defer stopWatch()
	r := &upgradeRun{c: c, opts: opts, spec: s, kc: kc}
	checkpoint := filepath.Join(opts.OutDir, s.Cluster.Name, ".upgrade-checkpoint.json")
	err = upgradeWorkflow.Run(ctx, r, workflow.Options{Out: c.Out, CheckpointPath: checkpoint, Fingerprint: fingerprint})
	if err != nil {
		return forgetValidationCheckpoint(err)
	}
	if r.Plan != nil && r.Plan.empty() {
		fmt.Fprintf(c.Out, "Nothing to change: cluster %q already matches %s.\n", s.Cluster.Name, opts.File)
		return nil
	}
	fmt.Fprintf(c.Out, "Workload cluster %q runs Kubernetes %s with %d workers.\n",
		s.Cluster.Name, s.KubernetesVersion, desiredWorkers(s.Cluster))
	return nil
}

// ensureManagerOf makes sure the manager of the management cluster behind kc (kubeconfig) runs
// when that cluster runs on this machine: without it nothing is reconciled, and its webhooks
// refuse every write. Then, until the returned stop is called, it reports what happens
// to that manager while the command waits (watchManager). A kubeconfig that is not a management
// cluster's is left to the command's own checks, which say what it points to.
func (c *Client) ensureManagerOf(ctx context.Context, kc ctrlclient.Client, kubeconfig, namespace string) (stop func(), err error) {
	mgmt, err := managementClusterOf(ctx, kc, kubeconfig, namespace)
	if err != nil || !c.runsHere(mgmt, kubeconfig) {
		return func() {}, nil //nolint:nilerr // reported by the command's own checks
	}
	if err := c.ensureLocalManager(ctx, mgmt, kubeconfig); err != nil {
		return nil, err
	}
	return c.watchManager(ctx, mgmt), nil
}

// ensureLocalManager makes sure the manager of management cluster mgmt runs when that cluster
// runs on this machine, and the supervisor of the home with it; a manager that stopped, as after a
// crash or a kill in the middle of an upgrade, is started again (by the supervisor, or by this)
// and waited for until it is ready. A management cluster elsewhere is left to whoever runs it.
func (c *Client) ensureLocalManager(ctx context.Context, mgmt, kubeconfig string) error {
	if !c.runsHere(mgmt, kubeconfig) {
		return nil
	}
	if c.managerRunning(mgmt) {
		if supervisor.Running(c.Home) {
			return nil
		}
		return c.EnsureSupervisor(ctx)
	}
	fmt.Fprintf(c.Out, "The manager of management cluster %q is not running; starting it again\n", mgmt)
	if err := c.StartManager(ctx, mgmt); err != nil {
		return fmt.Errorf("the manager of management cluster %q had stopped, and starting it again failed: %w", mgmt, err)
	}
	return nil
}

// runsHere reports whether management cluster mgmt, behind kubeconfig, runs on this machine: it
// was created from this Home, and kubeconfig names its API server.
func (c *Client) runsHere(mgmt, kubeconfig string) bool {
	local := c.localKubeconfigPath(mgmt)
	return mgmt != "" && isFile(local) && sameServer(kubeconfig, local)
}

// checkLocalBinaries checks, when management cluster mgmt behind kubeconfig runs on this
// machine, that the control plane programs of Kubernetes version are in this machine's binary
// cache: the manager's local provider starts a local cluster's control plane from them, and
// without them it would wait, reporting BinariesMissing, until someone builds them.
func (c *Client) checkLocalBinaries(mgmt, kubeconfig, version string) error {
	if !c.runsHere(mgmt, kubeconfig) {
		return nil
	}
	if _, err := binaries.Find(c.BinRoot, version); err != nil {
		return fmt.Errorf("management cluster %q runs on this machine and cannot start Kubernetes %s: %w", mgmt, version, err)
	}
	return nil
}

// isFile reports whether path names an existing regular file.
func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// sameServer reports whether two kubeconfig files point at the same API server.
func sameServer(a, b string) bool {
	ca, errA := RESTConfig(a)
	cb, errB := RESTConfig(b)
	return errA == nil && errB == nil && ca.Host == cb.Host
}

// forgetValidationCheckpoint removes the checkpoint of a run that failed in SetupAndValidate:
// nothing was done, so there is nothing to resume, and a corrected spec file (another
// fingerprint) must not be refused as stale.
func forgetValidationCheckpoint(err error) error {
	var perr *workflow.PhaseError
	if !errors.As(err, &perr) || perr.Phase != phaseSetupAndValidate || perr.CheckpointPath == "" {
		return err
	}
	if rmErr := os.Remove(perr.CheckpointPath); rmErr == nil || errors.Is(rmErr, os.ErrNotExist) {
		perr.CheckpointPath = ""
	}
	return err
}

// skipNothingToChange skips the phases after SetupAndValidate when the spec changes nothing.
func skipNothingToChange(_ context.Context, r *upgradeRun) (bool, string) {
	if r.Plan != nil && r.Plan.empty() {
		return true, "nothing to change"
	}
	return false, ""
}

// skipNotPaused skips ResumeReconcile when no pause of an upgrade can be on the Cluster.
func skipNotPaused(_ context.Context, r *upgradeRun) (bool, string) {
	if !r.MayBePaused {
		return true, "reconciliation was not paused"
	}
	return false, ""
}

// setupAndValidateUpgrade checks that the cluster can be upgraded through this management
// cluster and finds out, by a server-side dry run, what the new spec changes.
func setupAndValidateUpgrade(ctx context.Context, r *upgradeRun) error {
	mgmt, err := managementClusterOf(ctx, r.kc, r.opts.Kubeconfig, r.spec.Cluster.Namespace)
	if err != nil {
		return err
	}
	current, err := r.currentCluster(ctx, mgmt)
	if err != nil {
		return err
	}
	desired := r.spec.Cluster
	if name := desired.Spec.ManagementCluster.Name; name != "" && name != mgmt {
		return fmt.Errorf("%s: spec.managementCluster.name is %q, but --kubeconfig points to management cluster %q, which manages %q",
			r.opts.File, name, mgmt, desired.Name)
	}
	desired.Spec.ManagementCluster.Name = mgmt

	plan, err := planUpgrade(ctx, r.kc, r.spec.Objects, current)
	if err != nil {
		return err
	}
	plan.Management, plan.Version = mgmt, r.spec.KubernetesVersion
	if plan.versionChanges() {
		if err := r.checkReadyForVersionChange(current, plan); err != nil {
			return err
		}
	}
	r.Plan = plan
	for _, line := range plan.describe() {
		fmt.Fprintf(r.c.Out, "  %s\n", line)
	}
	return nil
}

// currentCluster reads the Cluster the spec names and checks that it is a workload cluster of
// management cluster mgmt that nobody else has paused.
func (r *upgradeRun) currentCluster(ctx context.Context, mgmt string) (*flotillav1.Cluster, error) {
	name, namespace := r.spec.Cluster.Name, r.spec.Cluster.Namespace
	current := &flotillav1.Cluster{}
	if err := r.kc.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, current); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cluster %q does not exist in namespace %q of management cluster %q: create it with `flotilla create cluster -f %s --kubeconfig %s`",
				name, namespace, mgmt, r.opts.File, r.opts.Kubeconfig)
		}
		return nil, fmt.Errorf("reading cluster %q: %w", name, err)
	}
	switch {
	case current.Spec.Management:
		return nil, fmt.Errorf("cluster %q is a management cluster: upgrade it without --kubeconfig (`flotilla upgrade cluster -f FILE`)", name)
	case current.Spec.ManagementCluster.Name != mgmt:
		return nil, fmt.Errorf("cluster %q is managed by management cluster %q, not by %q behind %s: pass the kubeconfig of %q",
			name, current.Spec.ManagementCluster.Name, mgmt, r.opts.Kubeconfig, current.Spec.ManagementCluster.Name)
	case !current.DeletionTimestamp.IsZero():
		return nil, fmt.Errorf("cluster %q is being deleted", name)
	case metav1.HasAnnotation(current.ObjectMeta, flotillav1.CAPIPausedAnnotation):
		return nil, fmt.Errorf("cluster %q is held while clusterctl move (or someone else) has paused its CAPI Cluster: run the upgrade once the move is done", name)
	}
	if value, paused := current.Annotations[clusterv1.PausedAnnotation]; paused {
		if value != upgradePausedBy {
			return nil, fmt.Errorf("cluster %q is paused by someone else (annotation %s=%q), and an upgrade needs its controllers: remove the annotation once that is done (`kubectl --kubeconfig %s annotate clusters.cluster.flotilla.dev -n %s %s %s-`)",
				name, clusterv1.PausedAnnotation, value, r.opts.Kubeconfig, namespace, name, clusterv1.PausedAnnotation)
		}
		// An upgrade that was killed before it could resume left it; this run resumes it.
		r.MayBePaused = true
	}
	return current, nil
}

// checkReadyForVersionChange refuses a version change while the cluster has not finished the
// previous change, so the control plane and workers never drift more than one minor apart, and
// checks the new version's binaries when the cluster is local and its management cluster runs
// on this machine.
func (r *upgradeRun) checkReadyForVersionChange(current *flotillav1.Cluster, plan *upgradePlan) error {
	if err := readyForVersionChange(current, plan, r.opts.Kubeconfig); err != nil {
		return err
	}
	if current.Spec.DatacenterRef.Kind != flotillav1.LocalDatacenterConfigKind {
		return nil // other providers do not run the control plane on this machine
	}
	return r.c.checkLocalBinaries(plan.Management, r.opts.Kubeconfig, plan.Version)
}

// readyForVersionChange refuses a version change of a cluster that has not finished the previous
// change; kubeconfig is the management cluster's, for the hint.
func readyForVersionChange(current *flotillav1.Cluster, plan *upgradePlan, kubeconfig string) error {
	ready := meta.FindStatusCondition(current.Status.Conditions, flotillav1.ReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionTrue && current.Status.ObservedGeneration == current.Generation {
		return nil
	}
	reason := "its status is not reported yet"
	if ready != nil {
		reason = ready.Reason + ": " + ready.Message
	}
	return fmt.Errorf("cluster %q is not Ready (%s): finish the change under way before moving it from Kubernetes %s to %s; `flotilla describe cluster %s --kubeconfig %s` shows what it waits for",
		current.Name, reason, plan.FromMinor, plan.ToMinor, current.Name, kubeconfig)
}

// pauseReconcile pauses the Cluster and waits until its controller has stopped: the Paused
// condition is True and the CAPI Cluster is paused, so nothing acts on a half-written spec.
func pauseReconcile(ctx context.Context, r *upgradeRun) error {
	r.MayBePaused = true
	key := r.clusterKey()
	if _, err := setUpgradePause(ctx, r.kc, key, true); err != nil {
		return err
	}
	return poll(ctx, readyPollInterval, pauseTimeout, func(ctx context.Context) (bool, error) {
		fc, capi, err := clusterAndCAPICluster(ctx, r.kc, key)
		if err != nil {
			return false, nil //nolint:nilerr // keep asking until the timeout
		}
		return meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.PausedCondition) && ptr.Deref(capi.Spec.Paused, false), nil
	}, func() error {
		return fmt.Errorf("the cluster controller did not report %q paused within %s: is the management cluster's manager running?", key.Name, pauseTimeout)
	})
}

// upgradeWorkloadCluster applies the new spec while the cluster is paused, lifts the pause so
// the controller rolls the whole change out at once, and waits until it is done.
func upgradeWorkloadCluster(ctx context.Context, r *upgradeRun) error {
	if err := r.checkPlan(); err != nil {
		return err
	}
	r.spec.Cluster.Spec.ManagementCluster.Name = r.Plan.Management
	if err := applyObjects(ctx, r.kc, r.spec.Objects); err != nil {
		return err
	}
	fmt.Fprintf(r.c.Out, "  applied the new spec of %q; resuming reconciliation so the controller rolls it out\n", r.Plan.Name)
	if _, err := setUpgradePause(ctx, r.kc, r.clusterKey(), false); err != nil {
		return err
	}
	return r.waitRollout(ctx)
}

// updateClusterAndGitResources makes sure the management cluster keeps the spec that was rolled
// out (applying it again is a no-op unless someone changed the Cluster meanwhile, which is then
// rolled out too) and records it in Git.
func updateClusterAndGitResources(ctx context.Context, r *upgradeRun) error {
	if err := r.checkPlan(); err != nil {
		return err
	}
	r.spec.Cluster.Spec.ManagementCluster.Name = r.Plan.Management
	before := &flotillav1.Cluster{}
	if err := r.kc.Get(ctx, r.clusterKey(), before); err != nil {
		return fmt.Errorf("reading cluster %q: %w", r.Plan.Name, err)
	}
	if err := applyObjects(ctx, r.kc, r.spec.Objects); err != nil {
		return err
	}
	after := &flotillav1.Cluster{}
	if err := r.kc.Get(ctx, r.clusterKey(), after); err != nil {
		return fmt.Errorf("reading cluster %q: %w", r.Plan.Name, err)
	}
	if after.Generation != before.Generation {
		fmt.Fprintf(r.c.Out, "  cluster %q was changed during the upgrade; re-applied %s and waiting for it\n", r.Plan.Name, r.opts.File)
		if err := r.waitRollout(ctx); err != nil {
			return err
		}
	}
	return commitToGit(ctx, r)
}

// commitToGit is the GitOps hook of UpdateClusterAndGitResources: with spec.gitOpsRef set, the
// spec file's objects are committed to the Git repository of that GitOpsConfig under
// clusters/<management>/workload-clusters/<name>/ (commitClusterSpec, cli/client/gitops.go),
// after the change was rolled out, so Git holds what the cluster runs. The management cluster's
// GitOps controller applies only specs that changed in Git since it last applied them, so the
// older spec still in Git during the rollout does not undo it.
func commitToGit(ctx context.Context, r *upgradeRun) error {
	if r.spec.Cluster.Spec.GitOpsRef == nil {
		fmt.Fprintf(r.c.Out, "  %q has no spec.gitOpsRef: no Git repository to update\n", r.Plan.Name)
		return nil
	}
	return r.c.commitClusterSpec(ctx, r.kc, r.spec, r.Plan.Management)
}

// resumeReconcile removes the pause an upgrade set, also when an earlier phase failed or the run
// was interrupted, and waits until the controller reports the cluster running again. Its context
// is not cancelled with the workflow's, so it bounds itself.
func resumeReconcile(ctx context.Context, r *upgradeRun) error {
	ctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	key := r.clusterKey()
	removed, err := setUpgradePause(ctx, r.kc, key, false)
	if err != nil {
		return fmt.Errorf("%w; the cluster stays paused until the same command runs again or the annotation is removed: kubectl --kubeconfig %s annotate clusters.cluster.flotilla.dev -n %s %s %s-",
			err, r.opts.Kubeconfig, key.Namespace, key.Name, clusterv1.PausedAnnotation)
	}
	if removed && workflow.PriorError(ctx) != nil {
		fmt.Fprintf(r.c.Out, "  resumed reconciliation of %q after the failure: its controller carries on with the spec it has\n", key.Name)
	}
	err = poll(ctx, readyPollInterval, resumeTimeout, func(ctx context.Context) (bool, error) {
		fc, capi, err := clusterAndCAPICluster(ctx, r.kc, key)
		if err != nil {
			return apierrors.IsNotFound(err), nil
		}
		return meta.IsStatusConditionFalse(fc.Status.Conditions, flotillav1.PausedCondition) && !ptr.Deref(capi.Spec.Paused, false), nil
	}, func() error {
		return fmt.Errorf("the pause of %q is removed, but its controller has not reported it running within %s: is the management cluster's manager running?", key.Name, resumeTimeout)
	})
	if err != nil {
		return err
	}
	r.MayBePaused = false
	return nil
}

// checkPlan fails a resumed run whose checkpoint holds no plan, which only a damaged
// checkpoint or one of another version of flotilla can.
func (r *upgradeRun) checkPlan() error {
	if r.Plan == nil {
		return errors.New("the checkpoint of this upgrade holds no plan: remove it and run the command again")
	}
	return nil
}

func (r *upgradeRun) clusterKey() ctrlclient.ObjectKey {
	return ctrlclient.ObjectKeyFromObject(r.spec.Cluster)
}

// setUpgradePause puts an upgrade's cluster.x-k8s.io/paused annotation on the Flotilla Cluster,
// or removes it (only the upgrade's own: a pause someone else set stays). It reports whether it
// changed anything. A merge patch touches the annotation alone, and the spec's apply, under
// another field manager, never removes it.
func setUpgradePause(ctx context.Context, kc ctrlclient.Client, key ctrlclient.ObjectKey, pause bool) (bool, error) {
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, key, fc); err != nil {
		if !pause && apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading cluster %q: %w", key.Name, err)
	}
	value, paused := fc.Annotations[clusterv1.PausedAnnotation]
	if paused == pause || (!pause && value != upgradePausedBy) {
		return false, nil
	}
	before := fc.DeepCopy()
	if pause {
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[clusterv1.PausedAnnotation] = upgradePausedBy
	} else {
		delete(fc.Annotations, clusterv1.PausedAnnotation)
	}
	if err := kc.Patch(ctx, fc, ctrlclient.MergeFrom(before), fieldOwner); err != nil {
		verb := "pausing"
		if !pause {
			verb = "resuming"
		}
		return false, fmt.Errorf("%s reconciliation of cluster %q: %w", verb, key.Name, err)
	}
	return true, nil
}

// clusterAndCAPICluster reads the Flotilla Cluster and its CAPI Cluster.
func clusterAndCAPICluster(ctx context.Context, kc ctrlclient.Client, key ctrlclient.ObjectKey) (*flotillav1.Cluster, *clusterv1.Cluster, error) {
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, key, fc); err != nil {
		return nil, nil, err
	}
	capi := &clusterv1.Cluster{}
	if err := kc.Get(ctx, key, capi); err != nil {
		return nil, nil, err
	}
	return fc, capi, nil
}
