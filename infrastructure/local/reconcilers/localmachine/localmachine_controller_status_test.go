package localmachine

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestSetStatus(t *testing.T) {
	initialized := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{
		Initialization: clusterv1.ClusterInitializationStatus{ControlPlaneInitialized: ptr.To(true)},
	}}
	machine := testMachine(nil)
	node := func(ready corev1.ConditionStatus) *corev1.Node {
		n := desiredNode(machine, &infrav1.LocalMachine{})
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Message: "kwok says so"}}
		}
		return n
	}
	type want struct {
		provisioned     bool
		readyStatus     metav1.ConditionStatus
		readyReason     string
		nodeReadyStatus metav1.ConditionStatus
		nodeReadyReason string
	}
	tests := []struct {
		name        string
		deleting    bool
		provisioned bool
		scope       scope
		want        want
	}{
		{
			name:  "a LocalMachine without a Machine waits for one",
			scope: scope{},
			want: want{readyStatus: metav1.ConditionFalse, readyReason: infrav1.WaitingForMachineReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.WaitingForMachineReason},
		},
		{
			name:  "a Machine whose Cluster is missing waits for it",
			scope: scope{machine: machine},
			want: want{readyStatus: metav1.ConditionFalse, readyReason: infrav1.WaitingForClusterReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.WaitingForClusterReason},
		},
		{
			name:  "a Cluster whose control plane is not initialized is waited for",
			scope: scope{machine: machine, cluster: &clusterv1.Cluster{}},
			want: want{readyStatus: metav1.ConditionFalse, readyReason: infrav1.WaitingForControlPlaneReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.WaitingForControlPlaneReason},
		},
		{
			name:  "an unreachable workload cluster is waited for",
			scope: scope{machine: machine, cluster: initialized, notConnected: true},
			want: want{readyStatus: metav1.ConditionFalse, readyReason: infrav1.WaitingForControlPlaneReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.WaitingForControlPlaneReason},
		},
		{
			name:  "a new Node that kwok has not seen is provisioned but not ready",
			scope: scope{machine: machine, cluster: initialized, node: node("")},
			want: want{provisioned: true, readyStatus: metav1.ConditionTrue, readyReason: infrav1.ProvisionedReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.WaitingForNodeReason},
		},
		{
			name:  "a Node kwok marked Ready makes NodeReady true",
			scope: scope{machine: machine, cluster: initialized, node: node(corev1.ConditionTrue)},
			want: want{provisioned: true, readyStatus: metav1.ConditionTrue, readyReason: infrav1.ProvisionedReason,
				nodeReadyStatus: metav1.ConditionTrue, nodeReadyReason: infrav1.NodeReadyReason},
		},
		{
			name:  "a Node whose Ready condition is unknown makes NodeReady unknown",
			scope: scope{machine: machine, cluster: initialized, node: node(corev1.ConditionUnknown)},
			want: want{provisioned: true, readyStatus: metav1.ConditionTrue, readyReason: infrav1.ProvisionedReason,
				nodeReadyStatus: metav1.ConditionUnknown, nodeReadyReason: infrav1.WaitingForNodeReason},
		},
		{
			name:        "a provisioned machine whose cluster is unreachable stays Ready and its Node is unknown",
			provisioned: true,
			scope:       scope{machine: machine, cluster: initialized, notConnected: true},
			want: want{provisioned: true, readyStatus: metav1.ConditionTrue, readyReason: infrav1.ProvisionedReason,
				nodeReadyStatus: metav1.ConditionUnknown, nodeReadyReason: infrav1.WaitingForControlPlaneReason},
		},
		{
			name:  "a Node that cannot be created says why",
			scope: scope{machine: machine, cluster: initialized, nodeErr: errors.New("a Node named work-md-0-abcde already exists")},
			want: want{readyStatus: metav1.ConditionFalse, readyReason: infrav1.NodeCreateFailedReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.NodeCreateFailedReason},
		},
		{
			name:        "a deleting machine says so",
			deleting:    true,
			provisioned: true,
			scope:       scope{machine: machine, cluster: initialized},
			want: want{provisioned: true, readyStatus: metav1.ConditionFalse, readyReason: infrav1.DeletingReason,
				nodeReadyStatus: metav1.ConditionFalse, nodeReadyReason: infrav1.DeletingReason},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lm := &infrav1.LocalMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work-md-0-xyz", Generation: 3}}
			if tt.deleting {
				lm.DeletionTimestamp = ptr.To(metav1.Now())
			}
			if tt.provisioned {
				lm.Status.Initialization.Provisioned = ptr.To(true)
				lm.Status.NodeName = machine.Name
			}
			s := tt.scope
			s.localMachine = lm

			setStatus(&s)

			g.Expect(ptr.Deref(lm.Status.Initialization.Provisioned, false)).To(Equal(tt.want.provisioned))
			ready := conditions.Get(lm, infrav1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.want.readyStatus))
			g.Expect(ready.Reason).To(Equal(tt.want.readyReason))
			g.Expect(ready.Message).NotTo(BeEmpty())
			g.Expect(ready.ObservedGeneration).To(Equal(int64(3)))
			nodeReady := conditions.Get(lm, infrav1.NodeReadyCondition)
			g.Expect(nodeReady).NotTo(BeNil())
			g.Expect(nodeReady.Status).To(Equal(tt.want.nodeReadyStatus))
			g.Expect(nodeReady.Reason).To(Equal(tt.want.nodeReadyReason))
			g.Expect(nodeReady.Message).NotTo(BeEmpty())
		})
	}
}

func TestSetStatusReportsTheNodeAndItsAddresses(t *testing.T) {
	g := NewWithT(t)
	machine := testMachine(nil)
	lm := &infrav1.LocalMachine{}
	s := &scope{localMachine: lm, machine: machine, cluster: &clusterv1.Cluster{}, node: desiredNode(machine, lm)}

	setStatus(s)

	g.Expect(lm.Status.NodeName).To(Equal(machine.Name))
	g.Expect(lm.Status.Addresses).To(Equal([]infrav1.MachineAddress{
		{Type: "InternalIP", Address: infrav1.NodeAddressIP},
		{Type: "Hostname", Address: machine.Name},
	}))
}

func TestProviderID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ProviderID(testMachine(nil))).To(Equal("local://team-a/work-md-0-abcde"))
}
