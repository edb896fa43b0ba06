package localmachine

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
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

func TestSetStatusOfARealNode(t *testing.T) {
	initialized := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{
		Initialization: clusterv1.ClusterInitializationStatus{ControlPlaneInitialized: ptr.To(true)},
	}}
	machine := testMachine(nil)
	running := []realnode.ProcessStatus{{Name: "containerd", PID: 10}, {Name: "kubelet", PID: 11}, {Name: "kube-proxy", PID: 12}}
	next := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	type want struct {
		ready, processes           metav1.ConditionStatus
		readyReason, processReason string
		message                    string
	}
	tests := []struct {
		name  string
		facts *realNodeFacts
		node  *corev1.Node
		want  want
	}{
		{
			name:  "a missing runc names the Debian package in both conditions",
			facts: &realNodeFacts{reason: infrav1.PrerequisiteMissingReason, err: errors.New("runc is not installed: install Debian's runc package")},
			want: want{ready: metav1.ConditionFalse, readyReason: infrav1.PrerequisiteMissingReason,
				processes: metav1.ConditionFalse, processReason: infrav1.PrerequisiteMissingReason, message: "install Debian's runc package"},
		},
		{
			name:  "running processes whose kubelet has not registered are joining",
			facts: &realNodeFacts{status: &realnode.Status{Processes: running[:2]}},
			want: want{ready: metav1.ConditionFalse, readyReason: infrav1.JoiningReason,
				processes: metav1.ConditionTrue, processReason: infrav1.ProcessesRunningReason, message: "containerd, kubelet run"},
		},
		{
			name:  "a registered Node makes the machine provisioned",
			facts: &realNodeFacts{status: &realnode.Status{Processes: running, Bootstrapped: true}},
			node:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: machine.Name}},
			want: want{ready: metav1.ConditionTrue, readyReason: infrav1.ProvisionedReason,
				processes: metav1.ConditionTrue, processReason: infrav1.ProcessesRunningReason, message: "containerd, kubelet, kube-proxy run"},
		},
		{
			name: "a process waiting out its back-off is restarting",
			facts: &realNodeFacts{status: &realnode.Status{Processes: []realnode.ProcessStatus{
				{Name: "containerd", PID: 10}, {Name: "kubelet", Failures: 1, Restarts: 1, NextStart: next}}}},
			want: want{ready: metav1.ConditionFalse, readyReason: infrav1.JoiningReason,
				processes: metav1.ConditionFalse, processReason: infrav1.RestartingReason, message: "kubelet exited and is started again at 2026-11-25T08:00:00Z"},
		},
		{
			name: "a crash looping process says so with the end of its log",
			facts: &realNodeFacts{status: &realnode.Status{Processes: []realnode.ProcessStatus{
				{Name: "containerd", PID: 10}, {Name: "kubelet", Failures: 3, Restarts: 3, NextStart: next, LogTail: "invalid configuration"}}}},
			want: want{ready: metav1.ConditionFalse, readyReason: infrav1.JoiningReason,
				processes: metav1.ConditionFalse, processReason: infrav1.CrashLoopBackOffReason,
				message: "kubelet exited 3 times in a row within 30s of its start; next start at 2026-11-25T08:00:00Z. The end of its log:\ninvalid configuration"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lm := &infrav1.LocalMachine{Spec: infrav1.LocalMachineSpec{Node: infrav1.RealNode}}
			s := &scope{localMachine: lm, machine: machine, cluster: initialized, real: tt.facts, node: tt.node}

			setStatus(s)

			ready := conditions.Get(lm, infrav1.ReadyCondition)
			g.Expect(ready.Status).To(Equal(tt.want.ready))
			g.Expect(ready.Reason).To(Equal(tt.want.readyReason))
			processes := conditions.Get(lm, infrav1.ProcessesRunningCondition)
			g.Expect(processes).NotTo(BeNil())
			g.Expect(processes.Status).To(Equal(tt.want.processes))
			g.Expect(processes.Reason).To(Equal(tt.want.processReason))
			g.Expect(processes.Message).To(ContainSubstring(tt.want.message))
		})
	}
}

func TestASimulatedNodeHasNoProcessesCondition(t *testing.T) {
	g := NewWithT(t)
	lm := &infrav1.LocalMachine{}
	setStatus(&scope{localMachine: lm})
	g.Expect(conditions.Get(lm, infrav1.ProcessesRunningCondition)).To(BeNil())
}
