package clusterspec

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestValidateDatacenterConfig(t *testing.T) {
	tests := []struct {
		name       string
		spec       infrav1.LocalDatacenterConfigSpec
		wantFields []string
		wantText   string
	}{
		{name: "no node network and the default mirror are accepted", spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: "127.0.0.1:5001"}},
		{name: "a private node network is accepted", spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: "10.201.0.0/24"}},
		{
			name: "a public node network is refused", spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: "8.8.8.0/24"},
			wantFields: []string{"spec.nodeNetwork"}, wantText: "not a private range",
		},
		{
			name: "a node network that is not a range is refused", spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: "10.201.0.1"},
			wantFields: []string{"spec.nodeNetwork"}, wantText: "not an IPv4 range",
		},
		{
			name: "a mirror off loopback is refused", spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: "registry.example.com:5000"},
			wantFields: []string{"spec.imageMirror"}, wantText: "loopback host:port of a registry on this machine",
		},
		{name: "a mirror at localhost is accepted", spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: "localhost:5002"}},
		{
			name: "another loopback address is refused: the nodes' forward goes to 127.0.0.1", spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: "127.0.0.2:5001"},
			wantFields: []string{"spec.imageMirror"}, wantText: "loopback host:port of a registry on this machine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fieldtest.Check(g, ValidateDatacenterConfig(&infrav1.LocalDatacenterConfig{Spec: tt.spec}), tt.wantFields, tt.wantText)
		})
	}
}

func TestValidateMachineConfig(t *testing.T) {
	tests := []struct {
		name       string
		capacity   corev1.ResourceList
		wantFields []string
		wantText   string
	}{
		{name: "no capacity takes the defaults"},
		{
			name: "standard and extended resources are accepted",
			capacity: corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"), "pods": resource.MustParse("250"),
				"ephemeral-storage": resource.MustParse("100Gi"), "hugepages-2Mi": resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("2")},
		},
		{
			name:       "a misspelt resource is rejected with the ones a Node reports",
			capacity:   corev1.ResourceList{"cpus": resource.MustParse("4")},
			wantFields: []string{"spec.capacity[cpus]"}, wantText: `"cpus" is not a resource a Node reports; use cpu, memory`,
		},
		{
			name:       "a negative quantity is rejected",
			capacity:   corev1.ResourceList{"memory": resource.MustParse("-1Gi")},
			wantFields: []string{"spec.capacity[memory]"}, wantText: "-1Gi is negative",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			mc := &infrav1.LocalMachineConfig{Spec: infrav1.LocalMachineConfigSpec{Capacity: tt.capacity}}
			fieldtest.Check(g, ValidateMachineConfig(mc), tt.wantFields, tt.wantText)
		})
	}
}
