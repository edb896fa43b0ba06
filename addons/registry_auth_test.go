package addons_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// A proxy pulls its chart from Flotilla's registry as it serves other machines (TLS, one user)
// with the credentials and CA its Secrets hold; without the credentials it gets nothing.
func TestAProxyPullsFromARegistryThatWantsAUserOverTLS(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	reg, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer reg.Close()
	reg.Push(t, reg.Host+"/charts", charttest.Hello("1.0.0"))
	for name, data := range map[string]map[string][]byte{
		"registry-ca":    {"ca.crt": reg.CAPEM},
		"registry-login": {"username": []byte(reg.Username), "password": []byte(reg.Password)},
	} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data})).To(Succeed())
	}
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Namespace = "oci://"+reg.Host+"/charts", "web-"+ns
	p.Spec.Registry = &addonsv1.RegistryOptions{CASecretRef: &addonsv1.SecretReference{Name: "registry-ca"}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("credential"))
	}, timeout, interval).Should(Succeed(), "the CA alone gets no chart")

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) {
		p.Spec.Registry.CredentialsSecretRef = &addonsv1.SecretReference{Name: "registry-login"}
	})
	eventuallyReady(g, ns, "web", "w1")
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, cm)).To(Succeed())
}
