package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// UpgradeClusterOptions are the options of `flotilla upgrade cluster`.
type UpgradeClusterOptions struct {
	clusterFileOptions
}

// NewUpgradeClusterCmd returns `flotilla upgrade cluster`.
func NewUpgradeClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &UpgradeClusterOptions{newClusterFileOptions(streams, global, "the cluster's spec with the new worker counts or Kubernetes version")}
	cmd := &cobra.Command{
		Use:   "cluster -f FILE [--kubeconfig MGMT.kubeconfig]",
		Short: "Upgrade or scale a cluster to match its spec",
		Long: `Change the cluster described by FILE to match it: worker counts go up or down, and
spec.kubernetesVersion may move one minor version up (such as 1.35 to 1.36). The control plane
restarts on the new version first, then the workers are replaced one at a time; the cluster's API
stays up except while its control plane restarts.

With --kubeconfig of a management cluster, upgrade one of its workload clusters. Phases:
SetupAndValidate, PauseReconcile, UpgradeWorkloadCluster, UpdateClusterAndGitResources,
ResumeReconcile. Reconciliation is paused only while the new spec is written, and is always
resumed, also when the upgrade fails or is interrupted.

Without --kubeconfig, upgrade the local management cluster FILE describes (spec.management: true)
the way it was created: SetupAndValidate, CreateBootstrapCluster, InstallComponents,
MoveManagementToBootstrap, UpgradeManagementCluster, MoveManagementBack,
InstallComponentsOnManagement, DeleteBootstrap. Workload clusters keep running throughout.

A spec that changes nothing changes nothing and succeeds. The management cluster refuses changes
to immutable fields and version skips or downgrades, and the command says why. A failed run
writes a checkpoint; run the same command again to resume.`,
		Example: `  # w1.yaml now asks for kubernetesVersion "1.36" and 3 workers
  flotilla upgrade cluster -f w1.yaml --kubeconfig mgmt/mgmt.kubeconfig

  # the management cluster itself
  flotilla upgrade cluster -f mgmt/mgmt.yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.addFlags(cmd, "directory holding NAME/, where an interrupted upgrade keeps its checkpoint")
	return cmd
}

// Run upgrades the cluster: the local management cluster without --kubeconfig, else a workload
// cluster of the management cluster it names.
func (o *UpgradeClusterOptions) Run(ctx context.Context) error {
	if o.global.Kubeconfig == "" {
		return o.client.UpgradeManagementCluster(ctx, client.UpgradeManagementClusterOptions{File: o.File, OutDir: o.OutDir})
	}
	return o.client.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{
		File: o.File, Kubeconfig: o.global.Kubeconfig, OutDir: o.OutDir,
	})
}
