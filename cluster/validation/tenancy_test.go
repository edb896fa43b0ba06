package validation

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestValidateClusterPeers(t *testing.T) {
	peer := func(ns, name string, management bool) flotillav1.Cluster {
		return flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: flotillav1.ClusterSpec{Management: management}}
	}
	tests := []struct {
		name       string
		mutate     func(*flotillav1.Cluster)
		others     []flotillav1.Cluster
		wantFields []string
		wantText   string
	}{
		{name: "a new name is accepted", others: []flotillav1.Cluster{peer("default", "mgmt", true), peer("default", "w2", false)}},
		{name: "the Cluster itself, listed, is no conflict", others: []flotillav1.Cluster{peer("fleet", "w1", false)}},
		{
			name:       "a name taken in another namespace is refused, naming that namespace",
			others:     []flotillav1.Cluster{peer("default", "w1", false)},
			wantFields: []string{"metadata.name"}, wantText: `"w1" is taken by a Cluster in namespace "default": cluster names are unique across the namespaces`,
		},
		{
			name:   "a second management cluster is refused, naming the first",
			mutate: func(c *flotillav1.Cluster) { c.Name, c.Spec.Management = "mgmt2", true },
			others: []flotillav1.Cluster{peer("default", "mgmt", true)}, wantFields: []string{"spec.management"},
			wantText: "this API server already holds management Cluster default/mgmt",
		},
		{name: "the first management cluster is accepted", mutate: func(c *flotillav1.Cluster) { c.Spec.Management = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCluster()
			if tt.mutate != nil {
				tt.mutate(c)
			}
			fieldtest.Check(g, ValidateClusterPeers(c, tt.others), tt.wantFields, tt.wantText)
		})
	}
}

func TestValidateClusterRequest(t *testing.T) {
	tenant := Request{ManagementCluster: "mgmt"}
	admin := Request{Admin: true, ManagementCluster: "mgmt"}
	endpoint := func(host string) func(*flotillav1.Cluster) {
		return func(c *flotillav1.Cluster) {
			c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: host, Port: 6443}
		}
	}
	tests := []struct {
		name       string
		old        func(*flotillav1.Cluster) // nil: a create
		mutate     func(*flotillav1.Cluster)
		who        Request
		wantFields []string
		wantText   string
	}{
		{name: "a tenant creates a workload cluster", who: tenant},
		{
			name:   "a tenant may not create a management cluster",
			mutate: func(c *flotillav1.Cluster) { c.Spec.Management, c.Spec.ManagementCluster.Name = true, c.Name }, who: tenant,
			wantFields: []string{"spec.management"}, wantText: "only an admin may create a management cluster",
		},
		{name: "an admin creates a management cluster", mutate: func(c *flotillav1.Cluster) { c.Spec.Management = true }, who: admin},
		{
			name:   "a tenant may not name another management cluster",
			mutate: func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "elsewhere" }, who: tenant,
			wantFields: []string{"spec.managementCluster.name"}, wantText: `name a management cluster other than this API server's ("mgmt")`,
		},
		{
			name:   "a tenant may not name a management cluster where there is none",
			mutate: func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "mgmt" }, who: Request{},
			wantFields: []string{"spec.managementCluster.name"}, wantText: "(none, or more than one)",
		},
		{name: "an admin names another management cluster (clusterctl move)", mutate: func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "elsewhere" }, who: admin},
		{
			name: "a tenant may not change the management cluster",
			old:  func(*flotillav1.Cluster) {}, mutate: func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "other" }, who: Request{ManagementCluster: "other"},
			wantFields: []string{"spec.managementCluster.name"}, wantText: `change it (from "mgmt" to "other")`,
		},
		{
			name: "the default filled in on an update of a cluster created before the management cluster is no change",
			old:  func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "" }, who: tenant,
		},
		{name: "a tenant scales a cluster", old: func(*flotillav1.Cluster) {}, mutate: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 9 }, who: tenant},
		{name: "a tenant sets a loopback endpoint", mutate: endpoint("127.0.0.1"), who: tenant},
		{name: "a tenant sets an IPv6 loopback endpoint", mutate: endpoint("::1"), who: tenant},
		{
			name: "a tenant may not bind a local control plane to every interface", mutate: endpoint("0.0.0.0"), who: tenant,
			wantFields: []string{"spec.controlPlane.endpoint.host"}, wantText: `let a local control plane serve on "0.0.0.0", which is not a loopback address`,
		},
		{
			name: "a tenant may not set a non-loopback endpoint later either", old: func(*flotillav1.Cluster) {}, mutate: endpoint("192.168.1.10"), who: tenant,
			wantFields: []string{"spec.controlPlane.endpoint.host"},
		},
		{name: "an admin binds a local control plane to another address", mutate: endpoint("0.0.0.0"), who: admin},
		{name: "a Packet cluster's endpoint is an elastic IP, not a local bind address", mutate: func(c *flotillav1.Cluster) { packet(c); endpoint("147.75.1.1")(c) }, who: tenant},
		{
			name: "a tenant may not change a management cluster",
			old:  func(c *flotillav1.Cluster) { c.Spec.Management = true }, mutate: func(c *flotillav1.Cluster) { c.Spec.Management = true; c.Spec.WorkerNodeGroups[0].Count = 9 },
			who: tenant, wantFields: []string{"spec"}, wantText: "only an admin may change a management cluster",
		},
		{
			name: "a tenant may apply a management cluster's spec unchanged",
			old:  func(c *flotillav1.Cluster) { c.Spec.Management = true }, mutate: func(c *flotillav1.Cluster) { c.Spec.Management = true }, who: tenant,
		},
		{
			name: "an admin changes a management cluster",
			old:  func(c *flotillav1.Cluster) { c.Spec.Management = true }, mutate: func(c *flotillav1.Cluster) { c.Spec.Management = true; c.Spec.KubernetesVersion = "1.35" },
			who: admin,
		},
		{
			name: "an endpoint an admin set stays when a tenant scales the cluster",
			old:  endpoint("0.0.0.0"), mutate: func(c *flotillav1.Cluster) { endpoint("0.0.0.0")(c); c.Spec.WorkerNodeGroups[0].Count = 3 }, who: tenant,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCluster(func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "mgmt" })
			var oldC *flotillav1.Cluster
			if tt.old != nil {
				oldC = c.DeepCopy()
				tt.old(oldC)
			}
			if tt.mutate != nil {
				tt.mutate(c)
			}
			fieldtest.Check(g, ValidateClusterRequest(oldC, c, tt.who), tt.wantFields, tt.wantText)
		})
	}
}

func TestValidateClusterDeleteRequest(t *testing.T) {
	management := validCluster(func(c *flotillav1.Cluster) { c.Spec.Management = true })
	workload := validCluster()
	g := NewWithT(t)
	fieldtest.Check(g, ValidateClusterDeleteRequest(management, Request{}), []string{"spec.management"}, "only an admin may delete a management cluster")
	fieldtest.Check(g, ValidateClusterDeleteRequest(management, Request{Admin: true}), nil, "")
	fieldtest.Check(g, ValidateClusterDeleteRequest(workload, Request{}), nil, "")
}

func TestValidateManagementConfigRequest(t *testing.T) {
	management := *validCluster(func(c *flotillav1.Cluster) { c.Spec.Management = true })
	workload := *validCluster(func(c *flotillav1.Cluster) { c.Name = "w1" })
	dc, mc := management.Spec.DatacenterRef, management.Spec.WorkerNodeGroups[0].MachineGroupRef
	g := NewWithT(t)
	fieldtest.Check(g, ValidateManagementConfigRequest(dc.Kind, dc.Name, []flotillav1.Cluster{workload, management}, Request{}),
		[]string{"spec"}, "only an admin may change or delete a config of management cluster "+management.Name)
	fieldtest.Check(g, ValidateManagementConfigRequest(mc.Kind, mc.Name, []flotillav1.Cluster{management}, Request{}),
		[]string{"spec"}, "only an admin may change or delete a config of management cluster")
	fieldtest.Check(g, ValidateManagementConfigRequest(dc.Kind, dc.Name, []flotillav1.Cluster{management}, Request{Admin: true}), nil, "")
	fieldtest.Check(g, ValidateManagementConfigRequest(dc.Kind, dc.Name, []flotillav1.Cluster{workload}, Request{}), nil, "")
	fieldtest.Check(g, ValidateManagementConfigRequest(dc.Kind, "another", []flotillav1.Cluster{management}, Request{}), nil, "")
}

func TestValidateLocalDatacenterConfigRequest(t *testing.T) {
	mirrored := func(mirror string) *infrav1.LocalDatacenterConfig {
		return &infrav1.LocalDatacenterConfig{Spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: mirror}}
	}
	networked := func(network string) *infrav1.LocalDatacenterConfig {
		return &infrav1.LocalDatacenterConfig{Spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: network}}
	}
	const onlyAdmins = `only an admin may forward another port of this machine ("127.0.0.1:6443") into the nodes' network`
	const outsidePool = "only an admin may name a node network outside 10.200.0.0/16 (192.168.1.0/24: this machine would route it to the cluster's nodes"
	tests := []struct {
		name       string
		old        *infrav1.LocalDatacenterConfig // nil: a create
		new        *infrav1.LocalDatacenterConfig
		who        Request
		wantFields []string
		wantText   string
	}{
		{name: "a tenant leaves the mirror out", new: mirrored(""), who: Request{}},
		{name: "a tenant names the embedded registry", new: mirrored(infrav1.DefaultImageMirror), who: Request{}},
		{name: "a tenant names the embedded registry at localhost", new: mirrored("localhost:5001"), who: Request{}},
		{
			name: "a tenant may not name another port", new: mirrored("127.0.0.1:6443"), who: Request{},
			wantFields: []string{"spec.imageMirror"}, wantText: onlyAdmins,
		},
		{
			name: "nor change the mirror to it", old: mirrored(""), new: mirrored("127.0.0.1:6443"), who: Request{},
			wantFields: []string{"spec.imageMirror"}, wantText: onlyAdmins,
		},
		{name: "an admin names another port", new: mirrored("127.0.0.1:6443"), who: Request{Admin: true}},
		{name: "a tenant changes other fields of an admin's mirrored config", old: mirrored("127.0.0.1:6443"), new: mirrored("127.0.0.1:6443"), who: Request{}},
		{name: "what is not a loopback port is left to ValidateLocalDatacenterConfig", new: mirrored("registry.example.com:5000"), who: Request{}},
		{name: "a tenant leaves the node network out", new: networked(""), who: Request{}},
		{name: "a tenant names a node network in the pool", new: networked("10.200.7.0/24"), who: Request{}},
		{name: "a tenant names the whole pool", new: networked("10.200.0.0/16"), who: Request{}},
		{
			name: "a tenant may not name a LAN the machine reaches through its default route", new: networked("192.168.1.0/24"), who: Request{},
			wantFields: []string{"spec.nodeNetwork"}, wantText: outsidePool,
		},
		{
			name: "nor a range that holds the pool", new: networked("10.0.0.0/8"), who: Request{},
			wantFields: []string{"spec.nodeNetwork"}, wantText: "only an admin may name a node network outside 10.200.0.0/16 (10.0.0.0/8",
		},
		{
			name: "nor change her node network to one outside the pool", old: networked("10.200.1.0/24"), new: networked("192.168.1.0/24"), who: Request{},
			wantFields: []string{"spec.nodeNetwork"}, wantText: outsidePool,
		},
		{name: "an admin names a range outside the pool", new: networked("192.168.1.0/24"), who: Request{Admin: true}},
		{name: "a tenant changes other fields of an admin's config outside the pool", old: networked("192.168.1.0/24"), new: networked("192.168.1.0/24"), who: Request{}},
		{name: "what is not a range is left to ValidateLocalDatacenterConfig", new: networked("lan"), who: Request{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fieldtest.Check(NewWithT(t), ValidateLocalDatacenterConfigRequest(tt.old, tt.new, tt.who), tt.wantFields, tt.wantText)
		})
	}
}
