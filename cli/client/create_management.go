package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cli/workflow"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// CreateManagementClusterOptions says which management cluster to create.
type CreateManagementClusterOptions struct {
	// File is the cluster spec (see `flotilla generate clusterconfig`).
	File string
	// OutDir receives <name>/<name>.kubeconfig. Default: the current directory.
	OutDir string
}

// managementRun is the state the phases of one management cluster creation, or upgrade, share.
type managementRun struct {
	c       *Client
	opts    CreateManagementClusterOptions
	spec    *spec.Spec
	bins    binaries.Set
	name    string
	boot    string // the bootstrap cluster's name
	bootCfg string // the bootstrap cluster's kubeconfig path
	mgmtCfg string // the new cluster's admin kubeconfig path, kept under its cluster dir

	// Plan is what an upgrade changes (upgrade only), saved with its checkpoint: a resumed
	// upgrade skips SetupAndValidate and finds it there.
	Plan *upgradePlan `json:"plan,omitempty"`
}

// managementWorkflow creates a management cluster through a bootstrap cluster.
var managementWorkflow = &workflow.Workflow[managementRun]{
	Name: "create-management-cluster",
	Phases: []workflow.Phase[managementRun]{
		{Name: "SetupAndValidate", Run: setupAndValidate},
		{Name: "CreateBootstrapCluster", Run: createBootstrapCluster},
		{Name: "InstallComponents", Run: installBootstrapComponents},
		{Name: "CreateWorkloadCluster", Run: createCluster},
		{Name: "MoveManagement", Run: moveManagement},
		{Name: "InstallComponentsOnManagement", Run: installManagementComponents},
		{Name: "InstallAddOns", Run: noPhase[managementRun], Skip: skipNoAddOns[managementRun]},
		{Name: "DeleteBootstrap", Run: deleteBootstrap},
	},
}

// CreateManagementCluster creates a local management cluster from the spec in opts.File: a
// bootstrap cluster creates it, then hands it its own objects, so that it manages itself.
// A failed run leaves a checkpoint; running it again resumes after the last completed phase.
func (c *Client) CreateManagementCluster(ctx context.Context, opts CreateManagementClusterOptions) error {
	if opts.OutDir == "" {
		opts.OutDir = "."
	}
	s, err := loadSpec(opts.File, true, "create it from its management cluster with --kubeconfig (such as mgmt/mgmt.kubeconfig), or set spec.management: true to create a management cluster")
	if err != nil {
		return err
	}
	name := s.Cluster.Name
	if _, err := c.runManagementWorkflow(ctx, managementWorkflow, opts, s, "checkpoint.json"); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "Management cluster %q is ready. Use it with:\n  kubectl --kubeconfig %s get clusters.cluster.x-k8s.io -A\n",
		name, UserKubeconfigPath(opts.OutDir, name))
	return nil
}

// runManagementWorkflow runs w, the create or the upgrade of the management cluster of spec s,
// with its checkpoint in the cluster's directory, and returns the state its phases shared.
func (c *Client) runManagementWorkflow(ctx context.Context, w *workflow.Workflow[managementRun], opts CreateManagementClusterOptions, s *spec.Spec, checkpoint string) (*managementRun, error) {
	name := s.Cluster.Name
	bins, err := binaries.Find(c.BinRoot, s.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	r := &managementRun{
		c: c, opts: opts, spec: s, bins: bins, name: name, boot: bootstrapName(name),
		bootCfg: c.localKubeconfigPath(bootstrapName(name)),
		mgmtCfg: c.localKubeconfigPath(name),
	}
	fingerprint, err := workflow.Fingerprint(s.Objects)
	if err != nil {
		return nil, err
	}
	return r, w.Run(ctx, r, workflow.Options{
		Out:            c.Out,
		CheckpointPath: filepath.Join(c.clusterDir(name), checkpoint),
		Fingerprint:    fingerprint,
	})
}

// setupAndValidate checks what can be checked before anything is created, so that a taken name
// leaves nothing behind. (The spec and the binaries were checked before the workflow started:
// phases after this one need them even when a resumed run skips this phase.)
func setupAndValidate(_ context.Context, r *managementRun) error {
	if r.c.managerRunning(r.name) {
		return fmt.Errorf("a management cluster named %q already runs on this machine (data in %s); delete it first with `flotilla delete cluster %s`, or choose another name",
			r.name, r.c.clusterDir(r.name), r.name)
	}
	if _, recorded := r.c.keeper(r.name).Inspect(managerProcess); recorded {
		return fmt.Errorf("a management cluster named %q exists on this machine but does not run (its processes stopped, as after a restart of the machine; data in %s): bring it back with `flotilla start`, or delete it with `flotilla delete cluster %s --force`",
			r.name, r.c.clusterDir(r.name), r.name)
	}
	if _, err := os.Stat(UserKubeconfigPath(r.opts.OutDir, r.name)); err == nil {
		return fmt.Errorf("%s already exists: a cluster named %q was created from this directory before; delete it with `flotilla delete cluster %s` or remove the file",
			UserKubeconfigPath(r.opts.OutDir, r.name), r.name, r.name)
	}
	return nil
}

// createBootstrapCluster starts the ephemeral control plane that creates the management cluster.
// It runs only etcd and kube-apiserver: it holds objects, it runs no workloads. Its etcd skips
// fsync: it lives for a minute, and a crash of this machine restarts the create anyway.
func createBootstrapCluster(ctx context.Context, r *managementRun) error {
	cfg := controlplane.Config{Name: r.boot, Dir: r.c.clusterDir(r.boot), Binaries: r.bins, UnsafeNoFsync: true}
	if _, err := controlplane.Ensure(ctx, cfg); err != nil {
		return fmt.Errorf("starting the bootstrap cluster: %w", err)
	}
	if err := r.c.EnsureSupervisor(ctx); err != nil {
		return err
	}
	if err := controlplane.WaitReady(ctx, cfg); err != nil {
		return fmt.Errorf("waiting for the bootstrap cluster: %w", err)
	}
	kubeconfig, err := controlplane.AdminKubeconfig(cfg)
	if err != nil {
		return err
	}
	return atomicfile.Write(r.bootCfg, kubeconfig)
}

// installBootstrapComponents installs Flotilla on the bootstrap cluster and starts its manager.
func installBootstrapComponents(ctx context.Context, r *managementRun) error {
	c, err := KubeClient(r.bootCfg)
	if err != nil {
		return err
	}
	if err := InstallComponents(ctx, c); err != nil {
		return err
	}
	return r.c.StartManager(ctx, r.boot)
}

// createCluster applies the spec to the bootstrap cluster, whose manager creates the new
// cluster's control plane and workers, and waits until the Cluster is Ready.
func createCluster(ctx context.Context, r *managementRun) error {
	// A resumed run skips InstallComponents; the bootstrap manager may have died since.
	if err := r.c.StartManager(ctx, r.boot); err != nil {
		return err
	}
	defer r.c.watchManager(ctx, r.boot)()
	c, err := KubeClient(r.bootCfg)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, c, r.spec.Objects); err != nil {
		return err
	}
	if err := r.c.waitClusterReady(ctx, c, r.spec.Cluster.Namespace, r.name); err != nil {
		return err
	}
	kubeconfig, err := GetKubeconfig(ctx, c, r.spec.Cluster.Namespace, r.name)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.mgmtCfg, kubeconfig); err != nil {
		return err
	}
	return atomicfile.Write(UserKubeconfigPath(r.opts.OutDir, r.name), kubeconfig)
}

// moveManagement prepares the new cluster to receive its own objects (CRDs and inventory, no
// controllers yet, so nothing there acts on them half-moved) and moves them with clusterctl
// move. The bootstrap manager keeps running: its Cluster controller holds the Flotilla Cluster
// through the move (see move), and the rest of its controllers honour the mover's pause.
func moveManagement(ctx context.Context, r *managementRun) error {
	target, err := KubeClient(r.mgmtCfg)
	if err != nil {
		return err
	}
	if err := InstallComponents(ctx, target); err != nil {
		return err
	}
	if err := r.c.StartManager(ctx, r.boot); err != nil {
		return err
	}
	if err := move(ctx, r.bootCfg, r.mgmtCfg, r.spec.Cluster.Namespace, r.name); err != nil {
		return fmt.Errorf("moving cluster %q to itself: %w", r.name, err)
	}
	return nil
}

// alreadyMoved is true when a previous run moved the objects: the source cluster no longer has
// the CAPI Cluster.
func alreadyMoved(ctx context.Context, source ctrlclient.Client, namespace, name string) (bool, error) {
	err := source.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, newCAPICluster())
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading cluster %q on the bootstrap cluster: %w", name, err)
	}
	return false, nil
}

// installManagementComponents starts the new cluster's own manager. It adopts the control plane
// processes the bootstrap manager started, and from here on the cluster manages itself.
func installManagementComponents(ctx context.Context, r *managementRun) error {
	if err := r.c.StartManager(ctx, r.name); err != nil {
		return err
	}
	defer r.c.watchManager(ctx, r.name)()
	c, err := KubeClient(r.mgmtCfg)
	if err != nil {
		return err
	}
	if err := r.c.waitClusterReady(ctx, c, r.spec.Cluster.Namespace, r.name); err != nil {
		return err
	}
	// The GitOpsConfig goes to the management cluster only now: in the bootstrap cluster, a
	// sync would recreate there the objects the move deletes.
	return r.c.commitClusterSpec(ctx, c, r.spec, r.name)
}

// deleteBootstrap stops the bootstrap cluster and removes its data.
func deleteBootstrap(ctx context.Context, r *managementRun) error {
	if err := r.c.stopManager(ctx, r.boot); err != nil {
		return err
	}
	return controlplane.Delete(ctx, r.c.clusterDir(r.boot))
}
