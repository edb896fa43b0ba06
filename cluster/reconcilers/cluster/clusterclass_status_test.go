package cluster

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// topologyCAPICluster is a CAPI Cluster with a topology, whose control plane has replicas
// machines at versions (version: count) and the given conditions.
func topologyCAPICluster(replicas, upToDate, ready int32, versions map[string]int32, conds ...metav1.Condition) *clusterv1.Cluster {
	capi := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	capi.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 20001}
	capi.Status.ControlPlane = &clusterv1.ClusterControlPlaneStatus{
		DesiredReplicas: ptr.To(replicas), Replicas: ptr.To(replicas), UpToDateReplicas: ptr.To(upToDate), ReadyReplicas: ptr.To(ready)}
	for v, n := range versions {
		capi.Status.ControlPlane.Versions = append(capi.Status.ControlPlane.Versions, clusterv1.StatusVersion{Version: v, Replicas: n})
	}
	capi.Status.Conditions = conds
	return capi
}

func capiCondition(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}
}

var (
	initialized = capiCondition(clusterv1.ClusterControlPlaneInitializedCondition, metav1.ConditionTrue, "Initialized", "")
	available   = capiCondition(clusterv1.ClusterControlPlaneAvailableCondition, metav1.ConditionTrue, "Available", "")
)

func TestSetTopologyControlPlaneReady(t *testing.T) {
	tests := []struct {
		name        string
		capi        *clusterv1.Cluster
		notServed   string
		invalid     field.ErrorList
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name: "an invalid spec says which field", capi: nil,
			invalid:    field.ErrorList{field.NotFound(field.NewPath("spec", "topology", "class"), "dev")},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.InvalidSpecReason, wantMessage: "spec.topology.class",
		},
		{
			name: "a provider that is not installed is named", capi: nil, notServed: "ClusterClass dev uses DevClusterTemplate",
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.ProviderNotInstalledReason, wantMessage: "DevClusterTemplate",
		},
		{
			name:       "before the CAPI Cluster exists the control plane is awaited",
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason, wantMessage: "does not exist yet",
		},
		{
			name: "a topology Cluster API could not reconcile is reported with its reason",
			capi: topologyCAPICluster(1, 0, 0, nil, capiCondition(clusterv1.ClusterTopologyReconciledCondition, metav1.ConditionFalse,
				clusterv1.ClusterTopologyReconciledFailedReason, "DevClusterTemplate dev not found")),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.TopologyNotReconciledReason, wantMessage: "DevClusterTemplate dev not found",
		},
		{
			name: "a control plane not initialized yet is awaited with Cluster API's message",
			capi: topologyCAPICluster(1, 0, 0, nil, capiCondition(clusterv1.ClusterControlPlaneInitializedCondition, metav1.ConditionFalse,
				"NotInitialized", "Control plane not yet initialized")),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason, wantMessage: "Control plane not yet initialized",
		},
		{
			name:       "a control plane on an older version is upgrading",
			capi:       topologyCAPICluster(1, 0, 1, map[string]int32{"v1.35.4": 1}, initialized, available),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason, wantMessage: "control plane runs v1.35.4 (1), rolling out v1.36.3",
		},
		{
			name:       "a control plane with machines still rolling out is upgrading",
			capi:       topologyCAPICluster(2, 1, 2, map[string]int32{"v1.36.3": 2}, initialized, available),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason, wantMessage: "1 of 2 machines up to date",
		},
		{
			name: "a control plane that is not available is awaited",
			capi: topologyCAPICluster(1, 1, 1, map[string]int32{"v1.36.3": 1}, initialized,
				capiCondition(clusterv1.ClusterControlPlaneAvailableCondition, metav1.ConditionFalse, "NotAvailable", "etcd is not healthy")),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason, wantMessage: "etcd is not healthy",
		},
		{
			name:       "an available control plane on the version asked for is ready",
			capi:       topologyCAPICluster(1, 1, 1, map[string]int32{"v1.36.3": 1}, initialized, available),
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason, wantMessage: "control plane v1.36.3 is available at 127.0.0.1:20001, 1 of 1 machines ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			setTopologyControlPlaneReady(c, "v1.36.3", tt.capi, tt.notServed, tt.invalid)
			cond := condition(g, c, flotillav1.ControlPlaneReadyCondition)
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(ContainSubstring(tt.wantMessage))
		})
	}
}

func TestLowestVersion(t *testing.T) {
	g := NewWithT(t)
	g.Expect(lowestVersion(nil)).To(BeEmpty())
	g.Expect(lowestVersion([]clusterv1.StatusVersion{{Version: "v1.36.3"}, {Version: "v1.35.4"}})).To(Equal("v1.35.4"))
}
