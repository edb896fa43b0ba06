package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/workflow"
	"github.com/flotilla-dev/flotilla/cluster/spec"
)

// CreateWorkloadClusterOptions says which workload cluster to create, and where.
type CreateWorkloadClusterOptions struct {
	// File is the cluster spec.
	File string
	// Kubeconfig is the management cluster's kubeconfig.
	Kubeconfig string
	// OutDir receives <name>/<name>.kubeconfig. Default: the current directory.
	OutDir string
}

// workloadRun is the state the phases of one workload cluster creation share.
type workloadRun struct {
	c          *Client
	opts       CreateWorkloadClusterOptions
	spec       *spec.Spec
	kc         ctrlclient.Client
	management string // the management cluster's name
}

// skipManagementOnly skips the phases that only creating a management cluster needs.
func skipManagementOnly(context.Context, *workloadRun) (bool, string) {
	return true, "--kubeconfig names an existing management cluster, which runs the components and keeps managing this cluster"
}

// workloadWorkflow creates a workload cluster from an existing management cluster: the
// bootstrap, install and move phases of the management workflow are skipped, and say why.
var workloadWorkflow = &workflow.Workflow[workloadRun]{
	Name: "create-workload-cluster",
	Phases: []workflow.Phase[workloadRun]{
		{Name: "SetupAndValidate", Run: setupAndValidateWorkload},
		{Name: "CreateBootstrapCluster", Run: noPhase[workloadRun], Skip: skipManagementOnly},
		{Name: "InstallComponents", Run: noPhase[workloadRun], Skip: skipManagementOnly},
		{Name: "CreateWorkloadCluster", Run: createWorkloadCluster},
		{Name: "MoveManagement", Run: noPhase[workloadRun], Skip: skipManagementOnly},
		{Name: "InstallComponentsOnManagement", Run: noPhase[workloadRun], Skip: skipManagementOnly},
		{Name: "InstallAddOns", Run: noPhase[workloadRun], Skip: skipNoAddOns[workloadRun]},
		{Name: "DeleteBootstrap", Run: noPhase[workloadRun], Skip: skipManagementOnly},
	},
}

// noPhase is the Run of a phase that is always skipped.
func noPhase[S any](context.Context, *S) error { return nil }

// skipNoAddOns skips InstallAddOns: nothing is left for the CLI to install. The management
// cluster's controllers give every cluster its package controller (PackageBundleController
// flotilla-packages/<name>) as it is created, and HelmChartProxies whose selector matches the
// cluster install their addons there.
func skipNoAddOns[S any](context.Context, *S) (bool, string) {
	return true, "the management cluster gives the cluster its package controller, and HelmChartProxies that select it install their addons"
}

// CreateWorkloadCluster creates the workload cluster of opts.File through the management
// cluster behind opts.Kubeconfig: it applies the spec there, and the management cluster's
// controllers do the rest; this waits and reports, then writes the kubeconfig.
func (c *Client) CreateWorkloadCluster(ctx context.Context, opts CreateWorkloadClusterOptions) error {
	if opts.OutDir == "" {
		opts.OutDir = "."
	}
	s, err := loadSpec(opts.File, false, "a cluster created with --kubeconfig is a workload cluster: set spec.management: false, or leave out --kubeconfig to create a management cluster")
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
	stopWatch, err := c.ensureManagerOf(ctx, kc, opts.Kubeconfig, s.Cluster.Namespace)
	if err != nil {
		return err
	}
	defer stopWatch()
	r := &workloadRun{c: c, opts: opts, spec: s, kc: kc}
	fingerprint, err := workflow.Fingerprint(s.Objects, opts.Kubeconfig)
	if err != nil {
		return err
	}
	err = workloadWorkflow.Run(ctx, r, workflow.Options{
		Out:            c.Out,
		CheckpointPath: filepath.Join(opts.OutDir, s.Cluster.Name, ".checkpoint.json"),
		Fingerprint:    fingerprint,
	})
	if err != nil {
		// A spec refused at SetupAndValidate created nothing: the corrected spec starts afresh.
		return forgetValidationCheckpoint(err)
	}
	fmt.Fprintf(c.Out, "Workload cluster %q is ready. Use it with:\n  kubectl --kubeconfig %s get nodes\n",
		s.Cluster.Name, UserKubeconfigPath(opts.OutDir, s.Cluster.Name))
	return nil
}

// setupAndValidateWorkload checks that --kubeconfig points at a management cluster, that this
// machine has what a local cluster needs when that management cluster runs here
// (checkLocalHost), and that the name is free there.
func setupAndValidateWorkload(ctx context.Context, r *workloadRun) error {
	mgmt, err := managementClusterOf(ctx, r.kc, r.opts.Kubeconfig, r.spec.Cluster.Namespace)
	if err != nil {
		return err
	}
	r.management = mgmt
	if r.spec.Provider == spec.ProviderLocal {
		if err := r.c.checkLocalHost(mgmt, r.opts.Kubeconfig, r.spec); err != nil {
			return err
		}
	}
	existing := &flotillav1.Cluster{}
	err = r.kc.Get(ctx, ctrlclient.ObjectKeyFromObject(r.spec.Cluster), existing)
	switch {
	case err == nil:
		return fmt.Errorf("cluster %q already exists in namespace %q of the management cluster of %s: choose another name, or delete it with `flotilla delete cluster %s --kubeconfig %s`",
			r.spec.Cluster.Name, r.spec.Cluster.Namespace, r.opts.Kubeconfig, r.spec.Cluster.Name, r.opts.Kubeconfig)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("checking whether cluster %q exists: %w", r.spec.Cluster.Name, err)
	}
	r.spec.Cluster.Spec.ManagementCluster.Name = mgmt
	return nil
}

// managementClusterOf returns the name of the management cluster behind kc, or an error that
// says what kubeconfig points to instead. A user who may list Clusters only in namespace (one
// bound to flotilla-cluster-creator there) cannot see the management Cluster: then it checks that
// the Flotilla API is served there and returns the management cluster that the Clusters of
// namespace record (the webhook sets spec.managementCluster.name on each, and every Cluster of a
// management cluster is managed by it), or "" when there is none yet: the webhook fills in the
// name of a new Cluster.
func managementClusterOf(ctx context.Context, kc ctrlclient.Client, kubeconfig, namespace string) (string, error) {
	list := &flotillav1.ClusterList{}
	err := kc.List(ctx, list)
	if apierrors.IsForbidden(err) && namespace != "" {
		err = kc.List(ctx, list, ctrlclient.InNamespace(namespace))
		if err == nil {
			for _, cl := range list.Items {
				if name := cl.Spec.ManagementCluster.Name; name != "" {
					return name, nil
				}
			}
			return "", nil
		}
	}
	if err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%s does not point to a Flotilla management cluster (it has no clusters.cluster.flotilla.dev API): pass the kubeconfig `flotilla create cluster` wrote for the management cluster, such as mgmt/mgmt.kubeconfig", kubeconfig)
		}
		return "", fmt.Errorf("reaching the management cluster of %s: %w", kubeconfig, err)
	}
	for _, cl := range list.Items {
		if cl.Spec.Management && cl.Spec.ManagementCluster.Name == cl.Name {
			return cl.Name, nil
		}
	}
	return "", fmt.Errorf("%s points to a cluster that is not a management cluster (it holds no Cluster with spec.management: true that manages itself): pass the management cluster's kubeconfig", kubeconfig)
}

// createWorkloadCluster applies the spec to the management cluster and waits until the cluster
// is Ready, then writes its kubeconfig.
func createWorkloadCluster(ctx context.Context, r *workloadRun) error {
	if err := EnsurePacketCredentials(ctx, r.kc, r.spec, PacketCredentials{
		APIKey: os.Getenv(PacketAPIKeyEnv), APIURL: os.Getenv(PacketAPIURLEnv),
	}); err != nil { // cli/client/packet.go
		return err
	}
	if err := applyObjects(ctx, r.kc, r.spec.Objects); err != nil {
		return err
	}
	if err := r.c.commitClusterSpec(ctx, r.kc, r.spec, r.management); err != nil {
		return err
	}
	if err := r.c.waitClusterReady(ctx, r.kc, r.spec.Cluster.Namespace, r.spec.Cluster.Name); err != nil {
		return err
	}
	kubeconfig, err := GetKubeconfig(ctx, r.kc, r.spec.Cluster.Namespace, r.spec.Cluster.Name)
	if err != nil {
		return err
	}
	return atomicfile.Write(UserKubeconfigPath(r.opts.OutDir, r.spec.Cluster.Name), kubeconfig)
}
