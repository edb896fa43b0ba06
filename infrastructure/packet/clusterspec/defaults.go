package clusterspec

import (
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// Defaults of a PacketMachineConfig, which its CRD's schema sets and a PacketMachineTemplate
// falls back to.
const (
	DefaultOS           = "ubuntu_24_04"
	DefaultBillingCycle = "hourly"
)

// DefaultDatacenterConfig sets on dc the defaults its CRD's schema sets in the API server, so
// that a spec file is checked as the API server will hold it: kube-vip as the VIP manager.
func DefaultDatacenterConfig(dc *infrav1.PacketDatacenterConfig) {
	if dc.Spec.VIPManager == "" {
		dc.Spec.VIPManager = infrav1.VIPManagerKubeVIP
	}
}

// DefaultMachineConfig sets on mc the defaults its CRD's schema sets: DefaultOS and
// DefaultBillingCycle.
func DefaultMachineConfig(mc *infrav1.PacketMachineConfig) {
	if mc.Spec.OS == "" {
		mc.Spec.OS = DefaultOS
	}
	if mc.Spec.BillingCycle == "" {
		mc.Spec.BillingCycle = DefaultBillingCycle
	}
}
