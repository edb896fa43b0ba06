package client

import (
	"context"
	"fmt"

	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	ctrl "sigs.k8s.io/controller-runtime"
)

// move moves the Cluster API objects of namespace from the cluster of kubeconfig from to that of
// kubeconfig to, with clusterctl move used as a library. Its progress is logged at -v 1.
func move(ctx context.Context, from, to, namespace string) error {
	clusterctllog.SetLogger(ctrl.LoggerFrom(ctx).WithName("clusterctl"))
	cc, err := clusterctl.New(ctx, "")
	if err != nil {
		return fmt.Errorf("creating the clusterctl client: %w", err)
	}
	return cc.Move(ctx, clusterctl.MoveOptions{
		FromKubeconfig: clusterctl.Kubeconfig{Path: from},
		ToKubeconfig:   clusterctl.Kubeconfig{Path: to},
		Namespace:      namespace,
	})
}
