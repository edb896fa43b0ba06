package localcluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// setStatus sets status.initialization.provisioned and the Ready condition of localCluster
// from its owner Cluster (nil while the Cluster has not claimed it). Provisioned, once true,
// stays true as the CAPI contract requires.
func setStatus(localCluster *infrav1.LocalCluster, cluster *clusterv1.Cluster) {
	provisioned := ptr.Deref(localCluster.Status.Initialization.Provisioned, false)
	switch {
	case cluster == nil:
		conditions.Set(localCluster, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.WaitingForClusterReason,
			Message: "Waiting for a CAPI Cluster to own this LocalCluster",
		})
	case provisioned || controlPlaneInitialized(cluster):
		localCluster.Status.Initialization.Provisioned = ptr.To(true)
		conditions.Set(localCluster, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionTrue,
			Reason:  infrav1.ProvisionedReason,
			Message: "The hosted control plane serves the cluster's endpoint; a local cluster has no other infrastructure",
		})
	default:
		conditions.Set(localCluster, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.WaitingForControlPlaneReason,
			Message: "Waiting for the cluster's control plane to be initialized",
		})
	}
}

// controlPlaneInitialized reports whether the Cluster's control plane has been initialized. CAPI
// patches the ControlPlaneInitialized condition and status.initialization in two requests, the
// condition first; either one counts, so that the event of the first is not missed.
func controlPlaneInitialized(cluster *clusterv1.Cluster) bool {
	return ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false) ||
		conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition)
}
