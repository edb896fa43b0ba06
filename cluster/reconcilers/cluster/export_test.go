package cluster

import (
	"context"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// ApplyForTest is apply, for the tests of package cluster_test, which run an API server.
func (r *Reconciler) ApplyForTest(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) error {
	return r.apply(ctx, c, obj)
}
