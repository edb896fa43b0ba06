package inmemory

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseResourcePath(t *testing.T) {
	tests := []struct {
		path   string
		want   resourcePath
		wantOK bool
	}{
		{"/api/v1/namespaces", resourcePath{gv: schema.GroupVersion{Version: "v1"}, resource: "namespaces"}, true},
		{"/api/v1/namespaces/apps", resourcePath{gv: schema.GroupVersion{Version: "v1"}, resource: "namespaces", name: "apps"}, true},
		{"/api/v1/namespaces/apps/configmaps", resourcePath{gv: schema.GroupVersion{Version: "v1"}, namespace: "apps", resource: "configmaps"}, true},
		{"/api/v1/namespaces/apps/configmaps/web", resourcePath{gv: schema.GroupVersion{Version: "v1"}, namespace: "apps", resource: "configmaps", name: "web"}, true},
		{"/apis/apps/v1/namespaces/apps/deployments/web/status", resourcePath{gv: appsV1, namespace: "apps", resource: "deployments", name: "web", subresource: "status"}, true},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", resourcePath{gv: schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}, resource: "clusterroles", name: "admin"}, true},
		{"/api/v1", resourcePath{}, false},
		{"/apis/apps/v1", resourcePath{}, false},
		{"/version", resourcePath{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := parseResourcePath(tt.path)
			g.Expect(ok).To(Equal(tt.wantOK))
			if ok {
				g.Expect(got).To(Equal(tt.want))
			}
		})
	}
}

func node(name, kubelet string, controlPlane bool, taints ...corev1.Taint) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	n.Status.NodeInfo.KubeletVersion = kubelet
	if controlPlane {
		n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
	}
	return n
}

func TestVersionInfoIsTheControlPlanes(t *testing.T) {
	g := NewWithT(t)
	_, ok := versionInfo(nil)
	g.Expect(ok).To(BeFalse(), "no Node, no version")
	info, ok := versionInfo([]corev1.Node{node("w", "v1.35.4", false), node("cp-2", "v1.36.3", true), node("cp-1", "v1.35.4", true)})
	g.Expect(ok).To(BeTrue())
	g.Expect(info.GitVersion).To(Equal("v1.35.4"), "the oldest control plane Node, as during an upgrade")
	g.Expect(info.Major).To(Equal("1"))
	g.Expect(info.Minor).To(Equal("35"))
	info, _ = versionInfo([]corev1.Node{node("w", "v1.36.3", false)})
	g.Expect(info.GitVersion).To(Equal("v1.36.3"), "any Node when none is a control plane's")
}

func TestAvailableStatus(t *testing.T) {
	g := NewWithT(t)
	d := &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "spec": map[string]any{"replicas": int64(3)}}}
	s := availableStatus(d, 2)
	g.Expect(s).To(HaveKeyWithValue("availableReplicas", int64(3)))
	g.Expect(s).To(HaveKeyWithValue("updatedReplicas", int64(3)))
	g.Expect(availableStatus(&unstructured.Unstructured{Object: map[string]any{"kind": "Deployment"}}, 2)).To(HaveKeyWithValue("readyReplicas", int64(1)), "one replica when unset")
	ds := availableStatus(&unstructured.Unstructured{Object: map[string]any{"kind": "DaemonSet"}}, 2)
	g.Expect(ds).To(HaveKeyWithValue("numberAvailable", int64(2)))
	g.Expect(ds).To(HaveKeyWithValue("desiredNumberScheduled", int64(2)))
	noSchedule := corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	g.Expect(schedulable([]corev1.Node{node("cp", "", true, noSchedule), node("w1", "", false), node("w2", "", false)})).To(BeEquivalentTo(2))
}

// Applying is a three-way merge: what the field manager applied before and leaves out goes,
// what others set stays.
func TestApplyMergesWithWhatTheManagerAppliedBefore(t *testing.T) {
	g := NewWithT(t)
	x := newExtensions(nil, nil, nil)
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	key := appliedKey("ns/c1", gvk, "apps", "web", "helm")
	first := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"apps"},"data":{"a":"1","b":"2"}}`)
	x.applied[key] = first
	live := &unstructured.Unstructured{}
	g.Expect(live.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"apps","resourceVersion":"7","labels":{"team":"x"}},"data":{"a":"1","b":"2","c":"by hand"}}`))).To(Succeed())
	second := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"apps"},"data":{"a":"10"}}`)
	merged, err := x.merge(key, second, live)
	g.Expect(err).NotTo(HaveOccurred())
	data, _, _ := unstructured.NestedStringMap(merged.Object, "data")
	g.Expect(data).To(Equal(map[string]string{"a": "10", "c": "by hand"}))
	g.Expect(merged.GetLabels()).To(Equal(map[string]string{"team": "x"}))
	g.Expect(merged.GetResourceVersion()).To(Equal("7"), "the update is conditional on the live object")

	merged, err = x.merge(appliedKey("ns/c1", gvk, "apps", "web", "someone-else"), second, live)
	g.Expect(err).NotTo(HaveOccurred())
	data, _, _ = unstructured.NestedStringMap(merged.Object, "data")
	g.Expect(data).To(Equal(map[string]string{"a": "10", "b": "2", "c": "by hand"}), "another manager removes nothing it did not apply")
}
