package client

import (
	"context"
	"fmt"
	"time"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// moveHoldTimeout bounds the wait for the source's Cluster reconciler to hold every Flotilla
// Cluster of the namespace before a move.
const moveHoldTimeout = 2 * time.Minute

// move moves the Cluster API objects of namespace from the cluster of kubeconfig from to that of
// kubeconfig to, with clusterctl move used as a library; name is the cluster the run is about,
// whose CAPI Cluster missing from the source means a previous run moved them already. The
// Flotilla Clusters hold through the move (flotillav1.MovingAnnotation, set first on the source
// and removed from the copies last), so the mover has nothing to wait for. Progress is logged at
// -v 1.
func move(ctx context.Context, from, to, namespace, name string) error {
	source, err := KubeClient(from)
	if err != nil {
		return err
	}
	target, err := KubeClient(to)
	if err != nil {
		return err
	}
	moved, err := alreadyMoved(ctx, source, namespace, name)
	if err != nil {
		return err
	}
	if !moved {
		if err := holdForMove(ctx, source, namespace); err != nil {
			return err
		}
		clusterctllog.SetLogger(ctrl.LoggerFrom(ctx).WithName("clusterctl"))
		cc, err := clusterctl.New(ctx, "")
		if err != nil {
			return fmt.Errorf("creating the clusterctl client: %w", err)
		}
		if err := cc.Move(ctx, clusterctl.MoveOptions{
			FromKubeconfig: clusterctl.Kubeconfig{Path: from},
			ToKubeconfig:   clusterctl.Kubeconfig{Path: to},
			Namespace:      namespace,
		}); err != nil {
			return err
		}
	}
	return setMoving(ctx, target, namespace, false)
}

// holdForMove sets flotillav1.MovingAnnotation on the Flotilla Clusters of namespace and waits
// until the Cluster reconciler holds each one: none carries clusterctl's block-move annotation.
func holdForMove(ctx context.Context, kc ctrlclient.Client, namespace string) error {
	if err := setMoving(ctx, kc, namespace, true); err != nil {
		return err
	}
	var blocked []string
	return poll(ctx, 100*time.Millisecond, moveHoldTimeout, func(ctx context.Context) (bool, error) {
		list := &flotillav1.ClusterList{}
		if err := kc.List(ctx, list, ctrlclient.InNamespace(namespace)); err != nil {
			return false, fmt.Errorf("listing the clusters of namespace %q: %w", namespace, err)
		}
		blocked = blocked[:0]
		for _, c := range list.Items {
			if _, ok := c.Annotations[clusterctlv1.BlockMoveAnnotation]; ok {
				blocked = append(blocked, c.Name)
			}
		}
		return len(blocked) == 0, nil
	}, func() error {
		return fmt.Errorf("the Cluster reconciler did not hold %v for the move within %s (they still carry %s): is the manager of the cluster they move from running?",
			blocked, moveHoldTimeout, clusterctlv1.BlockMoveAnnotation)
	})
}

// setMoving sets or removes flotillav1.MovingAnnotation on every Flotilla Cluster of namespace.
func setMoving(ctx context.Context, kc ctrlclient.Client, namespace string, moving bool) error {
	list := &flotillav1.ClusterList{}
	if err := kc.List(ctx, list, ctrlclient.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the clusters of namespace %q: %w", namespace, err)
	}
	value := `null`
	if moving {
		value = `"true"`
	}
	patch := ctrlclient.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, flotillav1.MovingAnnotation, value))
	for i := range list.Items {
		c := &list.Items[i]
		if _, ok := c.Annotations[flotillav1.MovingAnnotation]; ok == moving {
			continue
		}
		if err := kc.Patch(ctx, c, patch); err != nil {
			return fmt.Errorf("annotating cluster %q with %s: %w", c.Name, flotillav1.MovingAnnotation, err)
		}
	}
	return nil
}
