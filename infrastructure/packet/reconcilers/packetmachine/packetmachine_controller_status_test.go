package packetmachine

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

func TestPollingBacksOffWithTheDevicesAge(t *testing.T) {
	tests := []struct {
		name string
		age  time.Duration
		want time.Duration
	}{
		{name: "a new device is looked at once it is minPoll old", age: 0, want: minPoll},
		{name: "a look between two scheduled ones keeps the next one where it was", age: 2500 * time.Millisecond, want: 1500 * time.Millisecond},
		{name: "a look at a scheduled age schedules the next one a step later", age: 4 * time.Second, want: 2 * time.Second},
		{name: "a device ten seconds old is looked at again a quarter of that later", age: 10 * time.Second, want: 2500 * time.Millisecond},
		{name: "a device created ahead of this clock is looked at after the shortest wait", age: -time.Minute, want: minPoll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(nextPoll(tt.age)).To(Equal(tt.want))
		})
	}
}

// TestPollsFallAtFixedAges checks, over two hours of a device's life, that the looks are a
// quarter of the device's age apart (between minPoll and maxPoll), and that a reconcile at any
// moment in between schedules the look that was already scheduled.
func TestPollsFallAtFixedAges(t *testing.T) {
	g := NewWithT(t)
	for at := nextPoll(0); at < 2*time.Hour; {
		gap := nextPoll(at)
		g.Expect(gap).To(BeNumerically(">=", minPoll), "after the look at age %s", at)
		g.Expect(gap).To(BeNumerically("<=", maxPoll), "after the look at age %s", at)
		g.Expect(gap).To(BeNumerically("~", min(max(at/4, minPoll), maxPoll), time.Millisecond), "after the look at age %s", at)
		next := at + gap
		for _, age := range []time.Duration{at + 1, at + gap/3, at + gap*2/3, next - 1} {
			g.Expect(age+nextPoll(age)).To(Equal(next), "a reconcile at age %s", age)
		}
		at = next
	}
}

func TestTheReadyCondition(t *testing.T) {
	machine := &clusterv1.Machine{Spec: clusterv1.MachineSpec{ClusterName: "demo", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("b")}}}
	provisionedCluster := &clusterv1.Cluster{Status: clusterv1.ClusterStatus{Initialization: clusterv1.ClusterInitializationStatus{InfrastructureProvisioned: ptr.To(true)}}}
	pc := &infrav1.PacketCluster{}
	tests := []struct {
		name       string
		scope      scope
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "without a Machine it waits for one", scope: scope{}, wantStatus: metav1.ConditionFalse, wantReason: infrav1.WaitingForMachineReason},
		{name: "without provisioned infrastructure it waits for it", scope: scope{machine: machine, cluster: &clusterv1.Cluster{}, packetCluster: pc},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.WaitingForInfrastructureReason},
		{name: "without bootstrap data it waits for it", scope: scope{machine: &clusterv1.Machine{}, cluster: provisionedCluster, packetCluster: pc},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.WaitingForBootstrapDataReason},
		{name: "a provisioning device is reported", scope: scope{machine: machine, cluster: provisionedCluster, packetCluster: pc, device: &metal.Device{ID: "d1", State: metal.DeviceStateProvisioning}},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.DeviceProvisioningReason},
		{name: "an active device makes the machine Ready", scope: scope{machine: machine, cluster: provisionedCluster, packetCluster: pc, device: &metal.Device{ID: "d1", State: metal.DeviceStateActive}},
			wantStatus: metav1.ConditionTrue, wantReason: infrav1.ProvisionedReason},
		{name: "a failed device is terminal", scope: scope{machine: machine, cluster: provisionedCluster, packetCluster: pc, device: &metal.Device{ID: "d1", State: metal.DeviceStateFailed}},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.DeviceFailedReason},
		{name: "an API error is shown with its reason", scope: scope{machine: machine, cluster: provisionedCluster, packetCluster: pc, err: errors.New("boom"), reason: infrav1.RateLimitedReason},
			wantStatus: metav1.ConditionFalse, wantReason: infrav1.RateLimitedReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.scope
			s.packetMachine = &infrav1.PacketMachine{Spec: infrav1.PacketMachineSpec{ProviderID: "equinixmetal://d1"}}
			setStatus(&s)
			c := s.packetMachine.Status.Conditions
			g.Expect(c).To(HaveLen(1))
			g.Expect(c[0].Status).To(Equal(tt.wantStatus))
			g.Expect(c[0].Reason).To(Equal(tt.wantReason))
			g.Expect(c[0].Message).NotTo(BeEmpty())
		})
	}
}

func TestAddressesListThePublicOnesFirst(t *testing.T) {
	g := NewWithT(t)
	d := &metal.Device{Hostname: "demo-md-1", IPAddresses: []metal.IPAddress{
		{Address: "10.64.0.3", AddressFamily: 4},
		{Address: "147.75.0.3", AddressFamily: 4, Public: true},
		{Address: "2604:1380::1", AddressFamily: 6, Public: true},
	}}
	g.Expect(addresses(d)).To(Equal([]infrav1.MachineAddress{
		{Type: "Hostname", Address: "demo-md-1"},
		{Type: "ExternalIP", Address: "147.75.0.3"},
		{Type: "InternalIP", Address: "10.64.0.3"},
	}))
}
