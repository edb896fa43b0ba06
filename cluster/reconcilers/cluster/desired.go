package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
)

// The objects the reconciler applies come from pure builders: no client, no clock, the same
// input gives the same object. Each provider's are its own (infrastructure/<provider>/clusterspec,
// ClusterClass's in cluster/topology); what they share is in infrastructure/capiobjects. The
// reconciler builds only what it adds to every provider's CAPI Cluster.

// desiredCAPIClusterBase builds what the CAPI Cluster of every provider has
// (capiobjects.Cluster), owned by the Flotilla Cluster. The provider completes it with what it
// points at (provider.completeCAPICluster). paused sets spec.paused; when false the field is
// left out, so Flotilla neither sets nor clears a pause someone else (clusterctl move) set.
func desiredCAPIClusterBase(c *flotillav1.Cluster, paused bool) *clusterv1.Cluster {
	capi := capiobjects.Cluster(c)
	capi.OwnerReferences = []metav1.OwnerReference{capiobjects.ControllerRef(c)}
	if paused {
		capi.Spec.Paused = ptr.To(true)
	}
	return capi
}
