package validation

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// classCluster makes c a Cluster of the ClusterClass "dev", whose group names the worker class
// "default-worker".
func classCluster(c *flotillav1.Cluster) {
	c.Spec.Topology = &flotillav1.Topology{Class: "dev"}
	c.Spec.DatacenterRef = flotillav1.Ref{}
	c.Spec.WorkerNodeGroups[0].MachineGroupRef = flotillav1.Ref{}
	c.Spec.WorkerNodeGroups[0].Class = "default-worker"
}

func TestValidateClusterOfAClusterClass(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*flotillav1.Cluster)
		wantFields []string
		wantText   string
	}{
		{name: "a Cluster of a ClusterClass names no datacenter or machine config", mutate: classCluster},
		{
			name:       "a datacenterRef besides the class is refused",
			mutate:     func(c *flotillav1.Cluster) { classCluster(c); c.Spec.DatacenterRef = validCluster().Spec.DatacenterRef },
			wantFields: []string{"spec.datacenterRef"}, wantText: "remove datacenterRef",
		},
		{
			name: "machine configs, an endpoint and a version pin are the class's to decide",
			mutate: func(c *flotillav1.Cluster) {
				classCluster(c)
				c.Spec.ControlPlane.MachineGroupRef = &flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "cp"}
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 6443}
				c.Spec.WorkerNodeGroups[0].MachineGroupRef = flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"}
				c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.35"
			},
			wantFields: []string{"spec.controlPlane.machineGroupRef", "spec.controlPlane.endpoint",
				"spec.workerNodeGroups[0].machineGroupRef", "spec.workerNodeGroups[0].kubernetesVersion"},
		},
		{
			name:       "a group without a worker class is refused",
			mutate:     func(c *flotillav1.Cluster) { classCluster(c); c.Spec.WorkerNodeGroups[0].Class = "" },
			wantFields: []string{"spec.workerNodeGroups[0].class"}, wantText: "name the ClusterClass's worker class",
		},
		{
			name: "a management cluster is not of a ClusterClass",
			mutate: func(c *flotillav1.Cluster) {
				classCluster(c)
				c.Spec.Management, c.Spec.ManagementCluster.Name = true, c.Name
			},
			wantFields: []string{"spec.management"}, wantText: "a cluster of a ClusterClass is a workload cluster",
		},
		{
			name:       "a worker class without a ClusterClass is refused",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Class = "default-worker" },
			wantFields: []string{"spec.workerNodeGroups[0].class"}, wantText: "set spec.topology",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ValidateCluster(validCluster(tt.mutate))
			if tt.wantFields == nil {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(fieldtest.Fields(errs)).To(ConsistOf(tt.wantFields))
			g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestValidateUpdateOfAClusterClassCluster(t *testing.T) {
	tests := []struct {
		name       string
		old        func(*flotillav1.Cluster)
		mutate     func(*flotillav1.Cluster)
		wantFields []string
	}{
		{
			name:   "a ClusterClass cluster is upgraded and scaled",
			old:    classCluster,
			mutate: func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36"; c.Spec.WorkerNodeGroups[0].Count = 5 },
		},
		{
			name:       "its class cannot change",
			old:        classCluster,
			mutate:     func(c *flotillav1.Cluster) { c.Spec.Topology.Class = "other" },
			wantFields: []string{"spec.topology.class"},
		},
		{
			name: "it cannot leave its class for a Flotilla provider",
			old:  classCluster,
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Topology = nil
				c.Spec.WorkerNodeGroups[0].Class = ""
				c.Spec.DatacenterRef = validCluster().Spec.DatacenterRef
				c.Spec.WorkerNodeGroups[0].MachineGroupRef = validCluster().Spec.WorkerNodeGroups[0].MachineGroupRef
			},
			wantFields: []string{"spec.topology", "spec.datacenterRef"},
		},
		{
			name: "a new group of a ClusterClass cluster names a worker class",
			old:  classCluster,
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{Name: "md-1"})
			},
			wantFields: []string{"spec.workerNodeGroups[1].class"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			oldC := validCluster(tt.old)
			newC := oldC.DeepCopy()
			tt.mutate(newC)
			errs := ValidateClusterUpdate(oldC, newC)
			if tt.wantFields == nil {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(fieldtest.Fields(errs)).To(ConsistOf(tt.wantFields))
		})
	}
}
