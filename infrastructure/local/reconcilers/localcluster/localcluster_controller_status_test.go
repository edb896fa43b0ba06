package localcluster

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestSetStatus(t *testing.T) {
	initialized := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{
		Initialization: clusterv1.ClusterInitializationStatus{ControlPlaneInitialized: ptr.To(true)},
	}}
	tests := []struct {
		name            string
		provisioned     *bool
		cluster         *clusterv1.Cluster
		controlPlane    *controlplanev1.LocalControlPlane
		wantProvisioned bool
		wantStatus      metav1.ConditionStatus
		wantReason      string
	}{
		{
			name:       "a LocalCluster without an owner Cluster waits for one",
			cluster:    nil,
			wantStatus: metav1.ConditionFalse,
			wantReason: infrav1.WaitingForClusterReason,
		},
		{
			name:       "an owned LocalCluster waits for the control plane to be initialized",
			cluster:    &clusterv1.Cluster{},
			wantStatus: metav1.ConditionFalse,
			wantReason: infrav1.WaitingForControlPlaneReason,
		},
		{
			name:            "an owned LocalCluster is provisioned once the control plane is initialized",
			cluster:         initialized,
			wantProvisioned: true,
			wantStatus:      metav1.ConditionTrue,
			wantReason:      infrav1.ProvisionedReason,
		},
		{
			name: "the ControlPlaneInitialized condition counts as much as the status field",
			cluster: &clusterv1.Cluster{Status: clusterv1.ClusterStatus{Conditions: []metav1.Condition{{
				Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue, Reason: "Initialized",
			}}}},
			wantProvisioned: true,
			wantStatus:      metav1.ConditionTrue,
			wantReason:      infrav1.ProvisionedReason,
		},
		{
			name:    "an owned LocalCluster is provisioned once its LocalControlPlane is initialized, before the Cluster says so",
			cluster: &clusterv1.Cluster{},
			controlPlane: &controlplanev1.LocalControlPlane{Status: controlplanev1.LocalControlPlaneStatus{
				Initialization: controlplanev1.Initialization{ControlPlaneInitialized: ptr.To(true)},
			}},
			wantProvisioned: true,
			wantStatus:      metav1.ConditionTrue,
			wantReason:      infrav1.ProvisionedReason,
		},
		{
			name:         "a LocalControlPlane that has not served yet does not provision the LocalCluster",
			cluster:      &clusterv1.Cluster{},
			controlPlane: &controlplanev1.LocalControlPlane{},
			wantStatus:   metav1.ConditionFalse,
			wantReason:   infrav1.WaitingForControlPlaneReason,
		},
		{
			name:            "provisioned stays true when the Cluster reports otherwise later",
			provisioned:     ptr.To(true),
			cluster:         &clusterv1.Cluster{},
			wantProvisioned: true,
			wantStatus:      metav1.ConditionTrue,
			wantReason:      infrav1.ProvisionedReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			localCluster := &infrav1.LocalCluster{}
			localCluster.Status.Initialization.Provisioned = tt.provisioned

			setStatus(localCluster, tt.cluster, tt.controlPlane)

			g.Expect(ptr.Deref(localCluster.Status.Initialization.Provisioned, false)).To(Equal(tt.wantProvisioned))
			ready := conditions.Get(localCluster, infrav1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.wantStatus))
			g.Expect(ready.Reason).To(Equal(tt.wantReason))
			g.Expect(ready.Message).NotTo(BeEmpty())
		})
	}
}
