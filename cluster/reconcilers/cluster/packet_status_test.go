package cluster

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// packetCluster is a PacketCluster whose Ready condition has status (none when empty).
func packetCluster(status metav1.ConditionStatus) *infrav1.PacketCluster {
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	pc.Spec.ControlPlaneEndpoint = infrav1.APIEndpoint{Host: "127.40.0.8", Port: 6443}
	if status != "" {
		pc.Status.Conditions = []metav1.Condition{{Type: infrav1.ReadyCondition, Status: status, Reason: "WaitingForInfrastructure", Message: "Reserving the control plane elastic IP"}}
	}
	return pc
}

// kcp is a KubeadmControlPlane of replicas at version, initialized or not, with every replica
// up to date.
func kcp(replicas int32, version string, initialized bool) *kubeadmcontrolplanev1.KubeadmControlPlane {
	k := &kubeadmcontrolplanev1.KubeadmControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	k.Spec.Replicas, k.Spec.Version = ptr.To(replicas), version
	k.Status.Initialization.ControlPlaneInitialized = ptr.To(initialized)
	k.Status.Replicas, k.Status.UpToDateReplicas = ptr.To(replicas), ptr.To(replicas)
	if initialized {
		k.Status.Versions = []clusterv1.StatusVersion{{Version: version, Replicas: replicas}}
	}
	return k
}

// machine is a Machine of the cluster at a stage: "bootstrap" (no bootstrap data), "provisioning",
// "failed", "active" (no Node), "ready". labels mark it a control plane or MachineDeployment
// Machine.
func machine(name, stage string, labels map[string]string) clusterv1.Machine {
	m := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
	}
	if stage == "bootstrap" {
		set(clusterv1.MachineBootstrapConfigReadyCondition, metav1.ConditionFalse, "WaitingForControlPlaneInitialized", "")
		return m
	}
	set(clusterv1.MachineBootstrapConfigReadyCondition, metav1.ConditionTrue, "Ready", "")
	switch stage {
	case "provisioning":
		set(clusterv1.MachineInfrastructureReadyCondition, metav1.ConditionFalse, infrav1.DeviceProvisioningReason, "Device d-"+name+" is provisioning")
	case "bootstrap written":
		// The PacketMachine has not seen the bootstrap data yet: the Machine mirrors its old condition.
		set(clusterv1.MachineInfrastructureReadyCondition, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "Waiting for the bootstrap provider to write the bootstrap data Secret")
	case "failed":
		set(clusterv1.MachineInfrastructureReadyCondition, metav1.ConditionFalse, infrav1.DeviceFailedReason, "Device d-"+name+" failed to provision; the Machine must be replaced")
	case "active", "ready":
		set(clusterv1.MachineInfrastructureReadyCondition, metav1.ConditionTrue, "Provisioned", "")
	}
	if stage == "ready" {
		m.Status.NodeRef = clusterv1.MachineNodeReference{Name: name}
		set(clusterv1.MachineNodeHealthyCondition, metav1.ConditionTrue, "NodeHealthy", "")
	}
	return m
}

var cpLabels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}

func TestSetPacketControlPlaneReady(t *testing.T) {
	tests := []struct {
		name        string
		observed    packetObserved
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name:       "without a PacketCluster the infrastructure is waited for",
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForInfrastructureReason,
			wantMessage: "PacketCluster m1 does not exist yet",
		},
		{
			name:       "a PacketCluster reserving its elastic IP is waited for, saying so",
			observed:   packetObserved{packetCluster: packetCluster(metav1.ConditionFalse)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForInfrastructureReason,
			wantMessage: "PacketCluster m1 has no control plane endpoint yet (WaitingForInfrastructure: Reserving the control plane elastic IP)",
		},
		{
			name:       "a KubeadmControlPlane without machines waits for the first one",
			observed:   packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", false)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "waiting for KubeadmControlPlane m1 to create the first control plane Machine",
		},
		{
			name: "the first device provisioning is the reason",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", false),
				machines: []clusterv1.Machine{machine("m1-cp-a", "provisioning", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.DevicesProvisioningReason,
			wantMessage: "the first control plane machine is not up: 1 device provisioning (m1-cp-a: Device d-m1-cp-a is provisioning)",
		},
		{
			name: "a failed first device says the Machine must be replaced",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", false),
				machines: []clusterv1.Machine{machine("m1-cp-a", "failed", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.MachinesFailedReason,
			wantMessage: "the first control plane machine is not up: 1 device failed (m1-cp-a: Device d-m1-cp-a failed to provision; the Machine must be replaced)",
		},
		{
			name: "an active first device waits for kubeadm init at the endpoint",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", false),
				machines: []clusterv1.Machine{machine("m1-cp-a", "active", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForKubeadmInitReason,
			wantMessage: "the device of Machine m1-cp-a is active; waiting for kubeadm init on it and for Cluster API to read kubeadm-config from https://127.40.0.8:6443",
		},
		{
			name: "initialized with a Node to come waits for the Nodes",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", true),
				machines: []clusterv1.Machine{machine("m1-cp-a", "active", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForNodesReason,
			wantMessage: "0 of 1 control plane machines have a healthy Node; 1 device active, waiting for its Node (m1-cp-a: device active, waiting for its Node to register)",
		},
		{
			name: "three replicas of which one is still to be created wait for the control plane",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(3, "v1.36.3", true),
				machines: []clusterv1.Machine{machine("m1-cp-a", "ready", cpLabels), machine("m1-cp-b", "ready", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "2 of 3 control plane machines have a healthy Node",
		},
		{
			name: "another version is an upgrade",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.35.4", true),
				machines: []clusterv1.Machine{machine("m1-cp-a", "ready", cpLabels)}},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason,
			wantMessage: "control plane runs v1.35.4, rolling out v1.35.4: 1 of 1 machines up to date",
		},
		{
			name: "initialized with every Node healthy is ready; worker machines do not count",
			observed: packetObserved{packetCluster: packetCluster(metav1.ConditionTrue), kcp: kcp(1, "v1.36.3", true),
				machines: []clusterv1.Machine{machine("m1-cp-a", "ready", cpLabels), machine("m1-md-0-x", "provisioning", nil)}},
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason,
			wantMessage: "control plane v1.36.3 is initialized at 127.40.0.8:6443, 1 of 1 machines have a healthy Node",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Generation: 2}}
			setPacketControlPlaneReady(c, "v1.36.3", &tt.observed, nil)
			cond := condition(g, c, flotillav1.ControlPlaneReadyCondition)
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(Equal(tt.wantMessage))
		})
	}
}

func TestSetPacketWorkersReady(t *testing.T) {
	group := flotillav1.WorkerNodeGroup{Name: "md-0", Count: 3}
	mdLabels := map[string]string{clusterv1.MachineDeploymentNameLabel: "m1-md-0"}
	tests := []struct {
		name        string
		machines    []clusterv1.Machine
		ready       int32
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name:       "workers without join data wait for the control plane",
			machines:   []clusterv1.Machine{machine("a", "bootstrap", mdLabels), machine("b", "bootstrap", mdLabels), machine("c", "bootstrap", mdLabels)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "0 of 3 workers ready; md-0: 0 of 3 ready; machines: 3 waiting for kubeadm bootstrap data (a: waiting for the kubeadm bootstrap provider to write its cloud-init)",
		},
		{
			name:       "the machine furthest behind gives the reason, and each stage is counted",
			machines:   []clusterv1.Machine{machine("a", "ready", mdLabels), machine("b", "active", mdLabels), machine("c", "provisioning", mdLabels)},
			ready:      1,
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.DevicesProvisioningReason,
			wantMessage: "1 of 3 workers ready; md-0: 1 of 3 ready; machines: 1 device provisioning, 1 device active, waiting for its Node (c: Device d-c is provisioning)",
		},
		{
			name:       "a Machine with bootstrap data whose PacketMachine still waits for it is waiting for its device",
			machines:   []clusterv1.Machine{machine("a", "bootstrap written", mdLabels), machine("b", "bootstrap written", mdLabels), machine("c", "bootstrap written", mdLabels)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.DevicesProvisioningReason,
			wantMessage: "0 of 3 workers ready; md-0: 0 of 3 ready; machines: 3 device provisioning (a: waiting for its device)",
		},
		{
			name:       "active devices without Nodes wait for the Nodes",
			machines:   []clusterv1.Machine{machine("a", "ready", mdLabels), machine("b", "ready", mdLabels), machine("c", "active", mdLabels)},
			ready:      2,
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForNodesReason,
			wantMessage: "2 of 3 workers ready; md-0: 2 of 3 ready; machines: 1 device active, waiting for its Node (c: device active, waiting for its Node to register)",
		},
		{
			name:       "every Machine ready is ready",
			machines:   []clusterv1.Machine{machine("a", "ready", mdLabels), machine("b", "ready", mdLabels), machine("c", "ready", mdLabels)},
			ready:      3,
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason,
			wantMessage: "3 of 3 workers ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Generation: 2}}
			c.Spec.WorkerNodeGroups = []flotillav1.WorkerNodeGroup{group}
			md := mdWith(1, 1, "v1.36.3", 3, tt.ready, 3)
			setPacketWorkersReady(c, "v1.36.3", nil, map[string]*clusterv1.MachineDeployment{"md-0": md}, &packetObserved{machines: tt.machines}, nil)
			cond := condition(g, c, flotillav1.WorkersReadyCondition)
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(Equal(tt.wantMessage))
		})
	}
}
