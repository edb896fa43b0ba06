package gitops

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestLayoutPaths(t *testing.T) {
	tests := []struct {
		name                string
		management, cluster string
		wantDir, wantSpec   string
	}{
		{name: "the management cluster's spec is at the top of its directory", management: "mgmt", cluster: "mgmt",
			wantDir: "clusters/mgmt", wantSpec: "clusters/mgmt/cluster.yaml"},
		{name: "a workload cluster has a directory under workload-clusters", management: "mgmt", cluster: "w1",
			wantDir: "clusters/mgmt/workload-clusters/w1", wantSpec: "clusters/mgmt/workload-clusters/w1/cluster.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ClusterDir(tt.management, tt.cluster)).To(Equal(tt.wantDir))
			g.Expect(SpecPath(tt.management, tt.cluster)).To(Equal(tt.wantSpec))
		})
	}
}

func TestRenderSpecKeepsWhatASpecFileHoldsInOrder(t *testing.T) {
	g := NewWithT(t)
	c := &flotillav1.Cluster{
		TypeMeta: metav1.TypeMeta{APIVersion: flotillav1.GroupVersion.String(), Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", Namespace: "default", Labels: map[string]string{"team": "a"},
			ResourceVersion: "42", UID: "uid", Generation: 3, CreationTimestamp: metav1.Now(),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "w1"},
			WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 2,
				MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "w1-workers"}}},
			GitOpsRef: &flotillav1.Ref{Kind: flotillav1.GitOpsConfigKind, Name: "fleet"},
		},
		Status: flotillav1.ClusterStatus{Phase: "Ready"},
	}
	dc := &infrav1.LocalDatacenterConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "LocalDatacenterConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "default"},
		Spec:       infrav1.LocalDatacenterConfigSpec{Scheduler: ptr.To(true)},
	}

	out, err := RenderSpec("Spec of w1.\nSecond line.", []ctrlclient.Object{c, dc})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`# Spec of w1.
# Second line.
---
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  labels:
    team: a
  name: w1
  namespace: default
spec:
  controlPlane: {}
  datacenterRef:
    kind: LocalDatacenterConfig
    name: w1
  gitOpsRef:
    kind: GitOpsConfig
    name: fleet
  kubernetesVersion: "1.36"
  management: false
  workerNodeGroups:
  - count: 2
    machineGroupRef:
      kind: LocalMachineConfig
      name: w1-workers
    name: md-0
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: w1
  namespace: default
spec:
  scheduler: true
`))

	again, err := RenderSpec("Spec of w1.\nSecond line.", []ctrlclient.Object{c, dc})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out), "rendering is deterministic")
}

func TestRenderSpecRefusesAnObjectWithoutKind(t *testing.T) {
	g := NewWithT(t)
	_, err := RenderSpec("x", []ctrlclient.Object{&flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}})
	g.Expect(err).To(MatchError(ContainSubstring("has no apiVersion/kind set")))
}
