package desired

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

func releaseProxy(values string, from ...addonsv1.ValuesReference) *addonsv1.HelmReleaseProxy {
	return &addonsv1.HelmReleaseProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-w1", Namespace: "fleet", Labels: map[string]string{addonsv1.HelmChartProxyNameLabel: "hello"}},
		Spec: addonsv1.HelmReleaseProxySpec{
			ClusterName: "w1", ReleaseName: "hello", Values: values,
			ReleaseSpec: addonsv1.ReleaseSpec{ChartName: "hello", RepoURL: "oci://r/c", ValuesFrom: from},
		},
	}
}

func TestReleaseMergesValuesAndHashesThemAsTheEngineRecordsThem(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: "fleet"}, Data: map[string]string{"values.yaml": "a: {x: true}\nb: 0\n"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(cm).Build()
	from := addonsv1.ValuesReference{Kind: addonsv1.ConfigMapValues, Name: "base"}

	rel, hash, err := Release(context.Background(), c, releaseProxy("b: 1\n", from))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Values).To(Equal(map[string]any{"a": map[string]any{"x": true}, "b": float64(1)}), "spec.values over valuesFrom")
	g.Expect(rel.Namespace).To(Equal(DefaultReleaseNamespace))
	engineHash, err := helm.ValuesHash(rel.Values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hash).To(Equal(engineHash), "the hash the status records is the one the engine records")

	_, rewritten, err := Release(context.Background(), c, releaseProxy("b:   1", from))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rewritten).To(Equal(hash), "values written differently hash alike")
	_, other, err := Release(context.Background(), c, releaseProxy("b: 2\n", from))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).NotTo(Equal(hash))
}

func TestReleaseInputErrorsNameTheirReason(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(s).Build()

	_, _, err := Release(context.Background(), c, releaseProxy("[not, a, mapping]"))
	var ie *InputError
	g.Expect(errors.As(err, &ie)).To(BeTrue())
	g.Expect(ie.Reason).To(Equal(addonsv1.ValuesErrorReason))
	g.Expect(err).To(MatchError(ContainSubstring("spec.values is not a YAML mapping")))

	hrp := releaseProxy("")
	hrp.Spec.Registry = &addonsv1.RegistryOptions{CredentialsSecretRef: &addonsv1.SecretReference{Name: "creds"}}
	_, _, err = Release(context.Background(), c, hrp)
	g.Expect(errors.As(err, &ie)).To(BeTrue())
	g.Expect(ie.Reason).To(Equal(addonsv1.RegistryErrorReason))
	g.Expect(err).To(MatchError(ContainSubstring("reading registry credentials Secret creds")))
}

func TestTenantValuesLayerOverTheProxysForEveryClusterThenForOne(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	tenant := func(name string, on string, values string) *corev1.ConfigMap {
		labels := map[string]string{addonsv1.TenantValuesLabel: "hello"}
		if on != "" {
			labels["cluster.x-k8s.io/cluster-name"] = on
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet", Labels: labels}, Data: map[string]string{"values.yaml": values}}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-values", Namespace: "fleet"},
		Data:       map[string][]byte{"values.yaml": []byte("token: s3cret\n")},
	}
	// Secrets count by name only (they are never listed): a labelled one of another name does not.
	labelled := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "b-team-secret", Namespace: "fleet", Labels: map[string]string{addonsv1.TenantValuesLabel: "hello"}},
		Data:       map[string][]byte{"values.yaml": []byte("token: ignored\n")},
	}
	forW2 := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-values-w2", Namespace: "fleet"},
		Data:       map[string][]byte{"values.yaml": []byte("token: w2\n")},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		tenant("a-w1-only", "w1", "replicas: 5\n"),
		tenant("z-team", "", "replicas: 3\ngreeting: moin\n"),
		tenant("other-cluster", "w2", "replicas: 9\n"),
		secret, labelled, forW2,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "another-proxy", Namespace: "fleet", Labels: map[string]string{addonsv1.TenantValuesLabel: "web"}}, Data: map[string]string{"values.yaml": "greeting: no\n"}},
	).Build()

	hrp := releaseProxy("replicas: 1\ngreeting: hello\nport: 80\n")
	rel, _, err := Release(context.Background(), c, hrp)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Values).To(Equal(map[string]any{"replicas": float64(1), "greeting": "hello", "port": float64(80)}), "without tenantValues the tenants' are ignored")

	hrp.Spec.TenantValues = true
	rel, hash, err := Release(context.Background(), c, hrp)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Values).To(Equal(map[string]any{"replicas": float64(5), "greeting": "moin", "port": float64(80), "token": "s3cret"}),
		"every cluster's over the proxy's, then w1's over those; w2's and another proxy's left out")
	engineHash, err := helm.ValuesHash(rel.Values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hash).To(Equal(engineHash), "a tenant's change changes the hash, and so upgrades")

	bad := tenant("broken", "", "[not, a, mapping]")
	c = fake.NewClientBuilder().WithScheme(s).WithObjects(bad).Build()
	_, _, err = Release(context.Background(), c, hrp)
	var ie *InputError
	g.Expect(errors.As(err, &ie)).To(BeTrue())
	g.Expect(ie.Reason).To(Equal(addonsv1.ValuesErrorReason))
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap fleet/broken is not a YAML mapping")))
}
