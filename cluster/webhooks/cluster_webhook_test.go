package webhooks

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
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

// resolve supports 1.35 and 1.36, like binaries.Supported.
func resolve(minor string) (string, error) {
	switch minor {
	case "1.36":
		return "v1.36.3", nil
	case "1.35":
		return "v1.35.4", nil
	}
	return "", &unsupportedError{minor}
}

type unsupportedError struct{ minor string }

func (e *unsupportedError) Error() string {
	return "kubernetes version \"" + e.minor + "\" is not supported: supported minor versions are 1.36, 1.35"
}

// fields returns the fields an Invalid error names.
func fields(g Gomega, err error) []string {
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	var names []string
	for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
		names = append(names, cause.Field)
	}
	return names
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
			wantFields: []string{"spec.kubernetesVersion"}, wantText: "supported minor versions are 1.36, 1.35",
		},
		{
			name:       "a name longer than 40 characters is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Name = strings.Repeat("a", 41) },
			wantFields: []string{"metadata.name"},
		},
		{
			name:       "a name that is not a DNS label is rejected",
			mutate:     func(c *flotillav1.Cluster) { c.Name = "w1.example" },
			wantFields: []string{"metadata.name"},
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
			wantFields: []string{"spec.workerNodeGroups[0].kubernetesVersion"}, wantText: "supported minor versions are 1.36, 1.35",
		},
		{
			name: "a management cluster that names another management cluster is rejected",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Management = true
				c.Spec.ManagementCluster.Name = "other"
			},
			wantFields: []string{"spec.managementCluster.name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCluster()
			if tt.mutate != nil {
				tt.mutate(c)
			}
			_, err := (&Cluster{ResolveVersion: resolve}).ValidateCreate(context.Background(), c)
			if tt.wantFields == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(fields(g, err)).To(ConsistOf(tt.wantFields))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
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
				g.Expect((&Cluster{}).Default(context.Background(), newC)).To(Succeed())
			}
			_, err := (&Cluster{ResolveVersion: resolve}).ValidateUpdate(context.Background(), oldC, newC)
			if tt.wantFields == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(fields(g, err)).To(ConsistOf(tt.wantFields))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestDefault(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flotillav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgmt := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: "flotilla-system"},
		Spec:       flotillav1.ClusterSpec{Management: true},
	}
	tests := []struct {
		name     string
		existing []*flotillav1.Cluster
		mutate   func(*flotillav1.Cluster)
		check    func(g Gomega, c *flotillav1.Cluster)
	}{
		{
			name:   "a management cluster manages itself",
			mutate: func(c *flotillav1.Cluster) { c.Name = "mgmt"; c.Spec.Management = true },
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"))
			},
		},
		{
			name:     "a workload cluster is managed by the management cluster of its API server",
			existing: []*flotillav1.Cluster{mgmt},
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("mgmt"))
			},
		},
		{
			name: "a workload cluster without a management cluster in its API server is left for the client to name",
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(BeEmpty())
			},
		},
		{
			name:     "a management cluster the spec names is kept",
			existing: []*flotillav1.Cluster{mgmt},
			mutate:   func(c *flotillav1.Cluster) { c.Spec.ManagementCluster.Name = "other" },
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal("other"))
			},
		},
		{
			name: "the control plane count and the cluster network get their defaults",
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ControlPlane.Count).To(Equal(int32(1)))
				g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{flotillav1.DefaultPodCIDR}))
				g.Expect(c.Spec.ClusterNetwork.Services).To(Equal([]string{flotillav1.DefaultServiceCIDR}))
			},
		},
		{
			name: "a cluster network the spec sets is kept",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.ClusterNetwork = flotillav1.ClusterNetwork{Pods: []string{"172.16.0.0/16"}, Services: []string{"10.128.0.0/12"}}
			},
			check: func(g Gomega, c *flotillav1.Cluster) {
				g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{"172.16.0.0/16"}))
				g.Expect(c.Spec.ClusterNetwork.Services).To(Equal([]string{"10.128.0.0/12"}))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// The fake client stands in for the read-only lookup of existing Clusters.
			reader := fake.NewClientBuilder().WithScheme(scheme)
			for _, c := range tt.existing {
				reader = reader.WithObjects(c.DeepCopy())
			}
			c := &flotillav1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "fleet"},
				Spec:       flotillav1.ClusterSpec{KubernetesVersion: "1.36"},
			}
			if tt.mutate != nil {
				tt.mutate(c)
			}
			g.Expect((&Cluster{Reader: reader.Build()}).Default(context.Background(), c)).To(Succeed())
			tt.check(g, c)
		})
	}
}

func TestWarnings(t *testing.T) {
	g := NewWithT(t)
	c := validCluster(func(c *flotillav1.Cluster) { c.Spec.ControlPlane.Count = 3 })
	warnings, err := (&Cluster{ResolveVersion: resolve}).ValidateCreate(context.Background(), c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(ConsistOf(ContainSubstring("one hosted control plane per cluster")))
}
