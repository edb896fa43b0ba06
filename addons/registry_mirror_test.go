package addons_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/pkg/registrymirror"
)

// With the management cluster's mirror set, a proxy's chart comes from the mirror (TLS, its own
// user and CA from flotilla-system), never from the registry its repoURL names: that one is a
// port nothing listens on. A proxy naming its own mirror (plain HTTP, another prefix) pulls from
// that one instead: only it holds the version asked for.
func TestEveryChartComesFromTheMirrorWithTheOriginalUnreachable(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]

	mirror, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer mirror.Close()
	mirror.Push(t, mirror.Host+"/copies/charts", charttest.Hello("1.0.0"))
	own, stopOwn := charttest.StartRegistry()
	defer stopOwn()
	charttest.Push(t, own+"/team/charts", charttest.Hello("2.0.0"))

	system := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: flotillav1.SystemNamespace}}
	if err := env.Client.Create(ctx, system); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: flotillav1.SystemNamespace, Name: "mirror-login"},
		Data:       map[string][]byte{"username": []byte(mirror.Username), "password": []byte(mirror.Password), "ca.crt": mirror.CAPEM},
	})).To(Succeed())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: registrymirror.Key.Namespace, Name: registrymirror.Key.Name},
		Data: map[string]string{
			flotillav1.RegistryMirrorRegistryKey:          mirror.Host + "/copies",
			flotillav1.RegistryMirrorCredentialsSecretKey: "mirror-login",
		},
	}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, cm)
		_ = env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: flotillav1.SystemNamespace, Name: "mirror-login"}})
	})
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Namespace = "oci://127.0.0.1:1/charts", "web-"+ns
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, &corev1.ConfigMap{})).To(Succeed())

	p = proxy(ns, "team")
	p.Spec.RepoURL, p.Spec.Version, p.Spec.Namespace = "oci://127.0.0.1:1/team/charts", "2.0.0", "team-"+ns
	p.Spec.RegistryMirror = &addonsv1.RegistryMirror{Registry: own, RegistryOptions: addonsv1.RegistryOptions{PlainHTTP: true}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	hrp := eventuallyReady(g, ns, "team", "w1")
	g.Expect(hrp.Status.ChartVersion).To(Equal("2.0.0"))

	// A classic repository cannot be mirrored: refused, with the fix.
	p = proxy(ns, "classic")
	p.Spec.RepoURL, p.Spec.Namespace = "https://charts.example", "classic-"+ns
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "classic", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("is not an OCI registry, and every chart is pulled from the registry mirror " + mirror.Host + "/copies"))
	}, timeout, interval).Should(Succeed())
}
