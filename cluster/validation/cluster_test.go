package validation

import (
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

func validCluster(mutate ...func(*flotillav1.Cluster)) *flotillav1.Cluster {
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "fleet"},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.35",
			ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1},
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{
				Name: "md-0", Count: 2, MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"},
			}},
			ClusterNetwork:    flotillav1.ClusterNetwork{Pods: []string{"192.168.0.0/16"}, Services: []string{"10.96.0.0/12"}},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// packet makes c a Packet cluster with a control plane machine config.
func packet(c *flotillav1.Cluster) {
	c.Spec.DatacenterRef.Kind = providers.Packet.DatacenterConfig.Kind
	c.Spec.WorkerNodeGroups[0].MachineGroupRef.Kind = providers.Packet.MachineConfig.Kind
	c.Spec.ControlPlane.MachineGroupRef = &flotillav1.Ref{Kind: providers.Packet.MachineConfig.Kind, Name: "cp"}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*flotillav1.Cluster)
		wantFields []string
		wantText   string
	}{
		{name: "a complete cluster is accepted"},
		{
			name:       "an unsupported Kubernetes version is rejected with the supported ones",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.30" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "Kubernetes 1.30 is not supported; use one of 1.36, 1.35",
		},
		{
			name:       "a missing Kubernetes version is required with the supported ones",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "set the Kubernetes minor version, one of 1.36, 1.35",
		},
		{
			name:       "a full Kubernetes version is rejected with the minor form to write",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "v1.35.4" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: `"v1.35.4" is not in the minor version form; write "1.35"`,
		},
		{
			name:       "a Kubernetes version that is no version is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "latest" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: `"latest" is not a Kubernetes minor version; use one of 1.36, 1.35`,
		},
		{
			name:       "a name longer than 40 characters is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Name = strings.Repeat("a", 41) },
			wantFields: []string{"metadata.name"},
		},
		{
			name:       "a name that is not a DNS label is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Name = "W1_test" },
			wantFields: []string{"metadata.name"}, wantText: `use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit, such as "w1-test"`,
		},
		{
			name: "duplicate worker node group names are rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, c.Spec.WorkerNodeGroups[0])
			},
			wantFields: []string{"spec.workerNodeGroups[1].name"},
		},
		{
			name: "a group whose MachineDeployment name would not fit in a label value is rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Name = strings.Repeat("c", 40)
				c.Spec.WorkerNodeGroups[0].Name = strings.Repeat("g", 30)
			},
			wantFields: []string{"spec.workerNodeGroups[0].name"}, wantText: "longer than 63 characters",
		},
		{
			name: "a 30-character cluster name with a 40-character group is rejected: the MachineDeployment name would be 71 characters",
			mutate: func(c *flotillav1.Cluster) {
				c.Name = strings.Repeat("c", 30)
				c.Spec.WorkerNodeGroups[0].Name = strings.Repeat("g", 40)
			},
			wantFields: []string{"spec.workerNodeGroups[0].name"}, wantText: "shorten the group or the cluster name",
		},
		{
			name:       "a group name longer than 40 characters is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Name = "c"; c.Spec.WorkerNodeGroups[0].Name = strings.Repeat("g", 41) },
			wantFields: []string{"spec.workerNodeGroups[0].name"}, wantText: "use at most 40 lowercase letters",
		},
		{
			name:       "a group without a name is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Name = "" },
			wantFields: []string{"spec.workerNodeGroups[0].name"}, wantText: "name the group, such as md-0",
		},
		{
			name:       "a negative worker count is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = -1 },
			wantFields: []string{"spec.workerNodeGroups[0].count"}, wantText: "-1 is negative; use 0 or more",
		},
		{
			name: "an invalid Node label is rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Labels = map[string]string{"tier": "not valid!"}
			},
			wantFields: []string{"spec.workerNodeGroups[0].labels"}, wantText: `"not valid!" is not a valid label key or value`,
		},
		{
			name: "a missing machine group ref is required, naming the provider's machine config kind",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].MachineGroupRef = flotillav1.Ref{}
			},
			wantFields: []string{"spec.workerNodeGroups[0].machineGroupRef"}, wantText: "name a LocalMachineConfig",
		},
		{
			name:       "a missing datacenterRef is required with an example",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.DatacenterRef = flotillav1.Ref{} },
			wantFields: []string{"spec.datacenterRef"}, wantText: "such as {kind: LocalDatacenterConfig, name: w1}",
		},
		{
			name:       "the local provider runs one control plane",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Count = 3 },
			wantFields: []string{"spec.controlPlane.count"}, wantText: "the local provider runs one hosted control plane per cluster; set it to 1",
		},
		{
			name:       "a negative control plane count is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Count = -1 },
			wantFields: []string{"spec.controlPlane.count"}, wantText: "at least one control plane instance",
		},
		{
			name:       "a control plane endpoint needs a host and a TCP port",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Port: 70000} },
			wantFields: []string{"spec.controlPlane.endpoint.host", "spec.controlPlane.endpoint.port"}, wantText: "70000 is not a TCP port",
		},
		{
			name: "a Packet cluster may have three control plane devices",
			mutate: func(c *flotillav1.Cluster) {
				packet(c)
				c.Spec.ControlPlane.Count = 3
			},
		},
		{
			name: "a Packet cluster needs a machine config for its control plane",
			mutate: func(c *flotillav1.Cluster) {
				packet(c)
				c.Spec.ControlPlane.MachineGroupRef = nil
			},
			wantFields: []string{"spec.controlPlane.machineGroupRef"}, wantText: "name the PacketMachineConfig of the control plane devices",
		},
		{
			name: "a Packet cluster is never a management cluster",
			mutate: func(c *flotillav1.Cluster) {
				packet(c)
				c.Spec.Management, c.Spec.ManagementCluster.Name = true, c.Name
			},
			wantFields: []string{"spec.management"}, wantText: "a Packet cluster is a workload cluster",
		},
		{
			name:       "a management cluster name that is no cluster name is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "Mgmt" },
			wantFields: []string{"spec.managementCluster.name"}, wantText: `"Mgmt" is not a valid cluster name`,
		},
		{
			name:       "a gitOpsRef without a name is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: flotillav1.GitOpsConfigKind} },
			wantFields: []string{"spec.gitOpsRef.name"}, wantText: "name the GitOpsConfig",
		},
		{
			name:       "an unknown datacenter kind is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Kind = "VSphereDatacenterConfig" },
			wantFields: []string{"spec.datacenterRef.kind"}, wantText: "LocalDatacenterConfig",
		},
		{
			name: "a machine group ref of another provider's kind is rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].MachineGroupRef.Kind = "PacketMachineConfig"
				c.Spec.ControlPlane.MachineGroupRef = &flotillav1.Ref{Kind: "PacketMachineConfig", Name: "cp"}
			},
			wantFields: []string{"spec.controlPlane.machineGroupRef.kind", "spec.workerNodeGroups[0].machineGroupRef.kind"},
		},
		{
			name:       "a gitOpsRef that names another kind is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "FluxConfig", Name: "fleet"} },
			wantFields: []string{"spec.gitOpsRef.kind"}, wantText: "GitOpsConfig",
		},
		{
			name:       "a range that is not a CIDR is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ClusterNetwork.Services = []string{"10.96.0.0"} },
			wantFields: []string{"spec.clusterNetwork.services[0]"},
		},
		{
			name:   "a group of real nodes is accepted on the local provider",
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes },
		},
		{
			name: "real nodes on Packet are refused, naming the field",
			mutate: func(c *flotillav1.Cluster) {
				packet(c)
				c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes
			},
			wantFields: []string{"spec.workerNodeGroups[0].nodes"}, wantText: "with the local provider only",
		},
		{
			name:       "an unknown kind of nodes is refused with the kinds",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Nodes = "Virtual" },
			wantFields: []string{"spec.workerNodeGroups[0].nodes"}, wantText: `"Virtual" is not a kind of nodes; use Simulated or Real`,
		},
		{
			name: "real nodes need a Pod range of /24 or larger",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes
				c.Spec.ClusterNetwork.Pods = []string{"192.168.0.0/25"}
			},
			wantFields: []string{"spec.clusterNetwork.pods[0]"}, wantText: "a /24 of the Pod range each",
		},
		{
			name: "real nodes need Service ranges apart from the Pod range",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes
				c.Spec.ClusterNetwork.Services = []string{"192.168.128.0/20"}
			},
			wantFields: []string{"spec.clusterNetwork.services[0]"}, wantText: "overlaps the Pod range 192.168.0.0/16",
		},
		{
			name: "simulated nodes do not care about overlapping ranges",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.ClusterNetwork.Services = []string{"192.168.128.0/20"}
			},
		},
		{
			name: "a worker node group may pin a version older than the cluster's",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.KubernetesVersion = "1.36"
				c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.35"
			},
		},
		{
			name:       "a worker node group newer than the cluster is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.36" },
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: "workers never run a newer version than their control plane",
		},
		{
			name: "a worker node group more than three minor versions older is rejected with the oldest allowed",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.KubernetesVersion = "1.36"
				c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.32"
			},
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: "upgrade the group to 1.33 or newer first",
		},
		{
			name:       "a worker node group version within the skew but unsupported is rejected with the supported ones",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.33" },
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: "Kubernetes 1.33 is not supported; use one of 1.36, 1.35",
		},
		{
			name:       "a worker node group version in the full form is rejected with the minor form to write",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "v1.35" },
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: `write "1.35"`,
		},
		{
			name: "a management cluster that names another management cluster is rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Management = true
				c.Spec.ManagementCluster.Name = "other"
			},
			wantFields: []string{"spec.managementCluster.name"},
		},
		{
			name: "a management cluster's proxy with its exceptions is accepted",
			mutate: func(c *flotillav1.Cluster) {
				c.Name, c.Spec.Management, c.Spec.ManagementCluster.Name = "mgmt", true, "mgmt"
				c.Spec.Proxy = &flotillav1.ProxyConfiguration{HTTPSProxy: "http://proxy.example.com:3128",
					NoProxy: []string{".internal.example", "10.0.0.0/8", "192.168.1.5:6443", "[::1]:5001", "*"}}
			},
		},
		{
			name: "a workload cluster's proxy is rejected: the management cluster's manager fetches",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Proxy = &flotillav1.ProxyConfiguration{HTTPProxy: "http://proxy.example.com:3128"}
			},
			wantFields: []string{"spec.proxy"}, wantText: "set it on the management cluster",
		},
		{
			name: "a proxy that is not a URL and a noProxy entry with a scheme are rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Name, c.Spec.Management, c.Spec.ManagementCluster.Name = "mgmt", true, "mgmt"
				c.Spec.Proxy = &flotillav1.ProxyConfiguration{HTTPProxy: "proxy.example.com:3128", HTTPSProxy: "socks5://p:1080",
					NoProxy: []string{"https://registry.example", ""}}
			},
			wantFields: []string{"spec.proxy.httpProxy", "spec.proxy.httpsProxy", "spec.proxy.noProxy[0]", "spec.proxy.noProxy[1]"},
			wantText:   "such as http://proxy.example.com:3128",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCluster()
			if tt.mutate != nil {
				tt.mutate(c)
			}
			errs := ValidateCluster(c)
			if tt.wantFields == nil {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(fieldtest.Fields(errs)).To(ConsistOf(tt.wantFields))
			g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name       string
		old        func(*flotillav1.Cluster)
		mutate     func(*flotillav1.Cluster)
		defaulted  bool // the defaulting webhook runs on the new object first
		wantFields []string
		wantText   string
	}{
		{
			name:   "scaling a worker node group is accepted",
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 5 },
		},
		{
			name: "adding and removing worker node groups is accepted",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups = []flotillav1.WorkerNodeGroup{{Name: "md-1", Count: 1, MachineGroupRef: c.Spec.WorkerNodeGroups[0].MachineGroupRef}}
			},
		},
		{
			name:   "upgrading one minor version is accepted",
			mutate: func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
		},
		{
			name:       "upgrading more than one minor version is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.34" },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "one minor version at a time (to 1.35 first)",
		},
		{
			name:       "downgrading is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.35" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "downgrades are not supported",
		},
		{
			name:       "upgrading to an unsupported version is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.37" },
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "not supported",
		},
		{
			name: "upgrading the cluster while a group stays pinned at the old version is accepted",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.KubernetesVersion = "1.36"
				c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.35"
			},
		},
		{
			name:       "pinning a group below the version it runs is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.35" },
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: `group "md-0" runs 1.36: cannot go down to 1.35`,
		},
		{
			name:       "upgrading the cluster past the skew of a pinned group is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.32" },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.36" },
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: "4 minor versions older",
		},
		{
			name: "unpinning a group lets it follow the cluster",
			old: func(c *flotillav1.Cluster) {
				c.Spec.KubernetesVersion = "1.36"
				c.Spec.WorkerNodeGroups[0].KubernetesVersion = "1.35"
			},
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].KubernetesVersion = "" },
		},
		{
			name:       "turning a workload cluster into a management cluster is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.Management = true; c.Spec.ManagementCluster.Name = c.Name },
			wantFields: []string{"spec.management"}, wantText: "cannot become a management cluster in place",
		},
		{
			name:       "changing the datacenter is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Name = "elsewhere" },
			wantFields: []string{"spec.datacenterRef"},
		},
		{
			name:       "setting gitOpsRef on a cluster created without it is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"} },
			wantFields: []string{"spec.gitOpsRef"}, wantText: "is immutable",
		},
		{
			name:       "changing gitOpsRef is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"} },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "other"} },
			wantFields: []string{"spec.gitOpsRef"}, wantText: "is immutable",
		},
		{
			name:       "removing gitOpsRef is rejected",
			old:        func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"} },
			mutate:     func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = nil },
			wantFields: []string{"spec.gitOpsRef"}, wantText: "is immutable",
		},
		{
			name: "scaling a cluster with a gitOpsRef is accepted",
			old:  func(c *flotillav1.Cluster) { c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"} },
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.GitOpsRef = &flotillav1.Ref{Kind: "GitOpsConfig", Name: "fleet"}
				c.Spec.WorkerNodeGroups[0].Count = 3
			},
		},
		{
			name: "setting the control plane endpoint the first time is accepted",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 6443}
			},
		},
		{
			name: "changing the control plane endpoint once set is rejected",
			old: func(c *flotillav1.Cluster) {
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 6443}
			},
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 7443}
			},
			wantFields: []string{"spec.controlPlane.endpoint"},
		},
		{
			name: "removing the control plane endpoint once set is rejected",
			old: func(c *flotillav1.Cluster) {
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 6443}
			},
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Endpoint = nil },
			wantFields: []string{"spec.controlPlane.endpoint"},
		},
		{
			name:       "changing the cluster network is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ClusterNetwork.Pods = []string{"172.16.0.0/16"} },
			wantFields: []string{"spec.clusterNetwork.pods"},
		},
		{
			name:      "defaulting the cluster network of a cluster created without it is accepted",
			old:       func(c *flotillav1.Cluster) { c.Spec.ClusterNetwork = flotillav1.ClusterNetwork{} },
			mutate:    func(c *flotillav1.Cluster) {},
			defaulted: true,
		},
		{
			name: "every immutable field that changed is named",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.DatacenterRef.Name = "elsewhere"
				c.Spec.ClusterNetwork.Services = []string{"10.128.0.0/12"}
			},
			wantFields: []string{"spec.datacenterRef", "spec.clusterNetwork.services"},
		},
		{
			name:   "a cluster created under older rules can still have its metadata changed",
			old:    func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.30" },
			mutate: func(c *flotillav1.Cluster) { c.Finalizers = nil },
		},
		{
			name:   "a group created under older rules can still be scaled",
			old:    func(c *flotillav1.Cluster) { c.Name = "c"; c.Spec.WorkerNodeGroups[0].Name = strings.Repeat("g", 41) },
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 5 },
		},
		{
			name:   "a local cluster created with three control plane instances can still scale its workers",
			old:    func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Count = 3 },
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 5 },
		},
		{
			name:       "scaling a local control plane beyond one is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Count = 3 },
			wantFields: []string{"spec.controlPlane.count"}, wantText: "set it to 1",
		},
		{
			name: "a group's kind of nodes is immutable",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes
			},
			wantFields: []string{"spec.workerNodeGroups[0].nodes"}, wantText: `group "md-0" has Simulated nodes; add a group with nodes: Real`,
		},
		{
			name:   "writing the default kind out changes nothing",
			mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.SimulatedNodes },
		},
		{
			name: "adding a group of real nodes checks the cluster's ranges",
			old:  func(c *flotillav1.Cluster) { c.Spec.ClusterNetwork.Pods = []string{"192.168.0.0/25"} },
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{
					Name: "real", Count: 1, Nodes: flotillav1.RealNodes, MachineGroupRef: c.Spec.WorkerNodeGroups[0].MachineGroupRef})
			},
			wantFields: []string{"spec.clusterNetwork.pods[0]"}, wantText: "a /24 of the Pod range each",
		},
		{
			name: "a new group is checked",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{Name: "MD_1", MachineGroupRef: c.Spec.WorkerNodeGroups[0].MachineGroupRef})
			},
			wantFields: []string{"spec.workerNodeGroups[1].name"}, wantText: `such as "md-1"`,
		},
		{
			name: "a group whose labels change is checked",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Labels = map[string]string{"tier": "not valid!"}
			},
			wantFields: []string{"spec.workerNodeGroups[0].labels"}, wantText: "is not a valid label key or value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			oldC := validCluster()
			if tt.old != nil {
				tt.old(oldC)
			}
			newC := oldC.DeepCopy()
			tt.mutate(newC)
			if tt.defaulted {
				DefaultCluster(newC)
			}
			errs := ValidateClusterUpdate(oldC, newC)
			if tt.wantFields == nil {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(fieldtest.Fields(errs)).To(ConsistOf(tt.wantFields))
			g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(tt.wantText))
		})
	}
}
