package manager_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/flotilla-dev/flotilla/manager"
)

// The endpoint gate's kubeadm-config check against a real API server, reached with a kubeconfig
// Secret as KubeadmControlPlane writes it (<cluster>-kubeconfig, key "value").
func TestKubeadmConfigUploadedReadsTheWorkloadClusterWithItsAdminKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.NewNamespace(t)
	c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1"}}
	g.Expect(manager.KubeadmConfigUploaded(ctx, env.Client, c)).To(BeFalse(), "no kubeconfig Secret yet")

	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1-kubeconfig", Labels: map[string]string{clusterv1.ClusterNameLabel: "w1"}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": env.Kubeconfig},
	})).To(Succeed())
	g.Expect(manager.KubeadmConfigUploaded(ctx, env.Client, c)).To(BeFalse(), "no kubeadm-config yet")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
	g.Expect(manager.KubeadmConfigUploaded(ctx, env.Client, c)).To(BeTrue())
}
