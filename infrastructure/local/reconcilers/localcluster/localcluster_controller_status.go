package localcluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// setStatus sets status.initialization.provisioned and the Ready condition of localCluster
// from its owner Cluster (nil while the Cluster has not claimed it) and the Cluster's
// LocalControlPlane (nil when there is none yet, or the control plane is of another kind).
// Provisioned, once true, stays true as the CAPI contract requires.
func setStatus(localCluster *infrav1.LocalCluster, cluster *clusterv1.Cluster, controlPlane *controlplanev1.LocalControlPlane) {
	provisioned := ptr.Deref(localCluster.Status.Initialization.Provisioned, false)
	switch {
	case cluster == nil:
		conditions.Set(localCluster, metav1.Condition{
			Type:    infrav1.ReadyCondition,
			Status:  metav1.ConditionFalse,
			Reason:  infrav1.WaitingForClusterReason,
			Message: "Waiting for a CAPI Cluster to own this LocalCluster",
		})
	case provisioned || clusterControlPlaneInitialized(cluster) || (controlPlane != nil && controlPlaneInitialized(controlPlane)):
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

// clusterControlPlaneInitialized reports whether the Cluster's control plane has been
// initialized. CAPI patches the ControlPlaneInitialized condition and status.initialization in
// two requests, the condition first; either one counts, so that the event of the first is not
// missed.
func clusterControlPlaneInitialized(cluster *clusterv1.Cluster) bool {
	return ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false) ||
		conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition)
}

// controlPlaneInitialized reports whether a LocalControlPlane's kube-apiserver has answered
// /readyz. The LocalCluster is provisioned from that as soon as it happens, one round trip
// through the CAPI Cluster sooner than from the Cluster's ControlPlaneInitialized, which CAPI
// copies from the same field.
func controlPlaneInitialized(obj ctrlclient.Object) bool {
	controlPlane, ok := obj.(*controlplanev1.LocalControlPlane)
	return ok && ptr.Deref(controlPlane.Status.Initialization.ControlPlaneInitialized, false)
}
