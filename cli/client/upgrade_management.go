package client

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/workflow"
)

// Upgrading a management cluster.
//
// A management cluster does not upgrade itself: like its create, the upgrade goes through a
// bootstrap cluster that holds its objects meanwhile.
//
//	SetupAndValidate               the cluster runs on this machine and is a management cluster;
//	                               a server-side dry run of the spec on it (the webhook's verdict)
//	                               says what changes; nothing changes: say so and stop
//	CreateBootstrapCluster         an ephemeral control plane, as for create
//	InstallComponents              Flotilla on it, with its manager
//	MoveManagementToBootstrap      clusterctl move of the cluster's namespace to the bootstrap
//	                               cluster, whose manager adopts the running processes
//	UpgradeManagementCluster       the new spec is applied there and rolled out: the management
//	                               cluster's control plane restarts on the new version, then its
//	                               workers are replaced one at a time
//	MoveManagementBack             clusterctl move back: the cluster manages itself again
//	InstallComponentsOnManagement  its manager runs and the Cluster is Ready; with gitOpsRef the
//	                               spec is committed to Git
//	DeleteBootstrap                the bootstrap cluster goes
//
// clusterctl move takes every Cluster of the namespace, so workload clusters that share the
// management cluster's namespace travel with it and come back. Their processes keep running
// throughout (a moved LocalControlPlane leaves its processes to the copy, which adopts them), and
// nothing in their specs changes. A failed run leaves a checkpoint; the same command resumes it,
// wherever the objects are at that moment.

// UpgradeManagementClusterOptions says which management cluster to upgrade, and to what.
type UpgradeManagementClusterOptions struct {
	// File is the cluster's new spec.
	File string
	// OutDir holds <name>/<name>.kubeconfig, written by create. Default: the current directory.
	OutDir string
}

// managementUpgradeWorkflow upgrades a management cluster through a bootstrap cluster; the
// phases it shares with create are create's own.
var managementUpgradeWorkflow = &workflow.Workflow[managementRun]{
	Name: "upgrade-management-cluster",
	Phases: []workflow.Phase[managementRun]{
		{Name: phaseSetupAndValidate, Run: setupAndValidateManagementUpgrade},
		{Name: "CreateBootstrapCluster", Run: createBootstrapCluster, Skip: skipUnchangedManagement},
		{Name: "InstallComponents", Run: installBootstrapComponents, Skip: skipUnchangedManagement},
		{Name: "MoveManagementToBootstrap", Run: moveToBootstrap, Skip: skipUnchangedManagement},
		{Name: "UpgradeManagementCluster", Run: upgradeOnBootstrap, Skip: skipUnchangedManagement},
		{Name: "MoveManagementBack", Run: moveManagement, Skip: skipUnchangedManagement},
		{Name: "InstallComponentsOnManagement", Run: installManagementComponents, Skip: skipUnchangedManagement},
		{Name: "DeleteBootstrap", Run: deleteBootstrap, Skip: skipUnchangedManagement},
	},
}

// UpgradeManagementCluster changes the local management cluster of opts.File to match it:
// worker counts, and the Kubernetes version one minor up. It waits until the change is rolled
// out and the cluster manages itself again. A spec that changes nothing ends after
// SetupAndValidate, and creates nothing.
func (c *Client) UpgradeManagementCluster(ctx context.Context, opts UpgradeManagementClusterOptions) error {
	if opts.OutDir == "" {
		opts.OutDir = "."
	}
	s, err := loadSpec(opts.File, true, "upgrade it through its management cluster with --kubeconfig (such as mgmt/mgmt.kubeconfig)")
	if err != nil {
		return err
	}
	name := s.Cluster.Name
	if !isFile(c.localKubeconfigPath(name)) {
		return fmt.Errorf("no management cluster named %q runs on this machine (looked in %s): create it with `flotilla create cluster -f %s`",
			name, c.clusterDir(name), opts.File)
	}
	r, err := c.runManagementWorkflow(ctx, managementUpgradeWorkflow, CreateManagementClusterOptions(opts), s, "upgrade-checkpoint.json")
	if err != nil {
		return forgetValidationCheckpoint(err)
	}
	if r.Plan.empty() {
		fmt.Fprintf(c.Out, "Nothing to change: management cluster %q already matches %s.\n", name, opts.File)
		return nil
	}
	fmt.Fprintf(c.Out, "Management cluster %q runs Kubernetes %s with %d workers and manages itself.\n",
		name, s.KubernetesVersion, desiredWorkers(s.Cluster))
	return nil
}

// skipUnchangedManagement skips every phase after SetupAndValidate when the spec changes nothing.
func skipUnchangedManagement(_ context.Context, r *managementRun) (bool, string) {
	if r.Plan != nil && r.Plan.empty() {
		return true, "nothing to change"
	}
	return false, ""
}

// setupAndValidateManagementUpgrade checks that the cluster is a management cluster that can
// take the change, and finds out by a server-side dry run on it what the new spec changes.
func setupAndValidateManagementUpgrade(ctx context.Context, r *managementRun) error {
	// Its webhooks judge the dry run, and its Cluster controller lets the move go.
	if err := r.c.StartManager(ctx, r.name); err != nil {
		return err
	}
	kc, err := KubeClient(r.mgmtCfg)
	if err != nil {
		return err
	}
	if err := r.c.CheckCompatibility(ctx, kc, r.mgmtCfg, Mutating); err != nil {
		return err
	}
	current := &flotillav1.Cluster{}
	key := ctrlclient.ObjectKey{Namespace: r.spec.Cluster.Namespace, Name: r.name}
	if err := kc.Get(ctx, key, current); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("management cluster %q holds no Cluster %s: was it created by another flotilla, or is an upgrade of it under way elsewhere?", r.name, key)
		}
		return fmt.Errorf("reading cluster %q: %w", r.name, err)
	}
	if !current.Spec.Management {
		return errors.New("cluster " + r.name + " is a workload cluster: upgrade it with --kubeconfig of its management cluster")
	}
	r.spec.Cluster.Spec.ManagementCluster.Name = r.name
	plan, err := planUpgrade(ctx, kc, r.spec.Objects, current)
	if err != nil {
		return err
	}
	plan.Management, plan.Version = r.name, r.spec.KubernetesVersion
	if plan.versionChanges() {
		if err := readyForVersionChange(current, plan, r.mgmtCfg); err != nil {
			return err
		}
	}
	r.Plan = plan
	for _, line := range plan.describe() {
		fmt.Fprintf(r.c.Out, "  %s\n", line)
	}
	return nil
}

// moveToBootstrap hands the management cluster's objects to the bootstrap cluster, whose
// manager takes over; the management cluster's own manager lets them go.
func moveToBootstrap(ctx context.Context, r *managementRun) error {
	if err := r.c.StartManager(ctx, r.boot); err != nil {
		return err
	}
	if err := move(ctx, r.mgmtCfg, r.bootCfg, r.spec.Cluster.Namespace, r.name); err != nil {
		return fmt.Errorf("moving management cluster %q to the bootstrap cluster: %w", r.name, err)
	}
	return nil
}

// upgradeOnBootstrap applies the new spec in the bootstrap cluster and waits until its manager
// has rolled it out to the management cluster.
func upgradeOnBootstrap(ctx context.Context, r *managementRun) error {
	kc, err := KubeClient(r.bootCfg)
	if err != nil {
		return err
	}
	r.spec.Cluster.Spec.ManagementCluster.Name = r.name
	if err := applyObjects(ctx, kc, r.spec.Objects); err != nil {
		return err
	}
	// The supervisor starts the bootstrap cluster's manager again should it stop; the watch says so.
	defer r.c.watchManager(ctx, r.boot)()
	return r.c.waitForRollout(ctx, rollout{
		kc: kc, key: ctrlclient.ObjectKey{Namespace: r.spec.Cluster.Namespace, Name: r.name},
		version: r.spec.KubernetesVersion, kubeconfig: r.bootCfg,
	})
}
