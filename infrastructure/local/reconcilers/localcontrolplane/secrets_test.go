package localcontrolplane

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

func testLCP() *controlplanev1.LocalControlPlane {
	return &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work-cp", UID: types.UID("lcp-uid")}}
}

func testCA(t *testing.T) *pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestClusterSecretsFollowTheCAPIContract(t *testing.T) {
	ca := testCA(t)
	tests := []struct {
		name     string
		secret   *corev1.Secret
		wantName string
		wantKeys []string
	}{
		{name: "the CA Secret is <cluster>-ca with tls.crt and tls.key", secret: caSecret(testLCP(), "work", *ca), wantName: "work-ca", wantKeys: []string{"tls.crt", "tls.key"}},
		{name: "the kubeconfig Secret is <cluster>-kubeconfig with value", secret: kubeconfigSecret(testLCP(), "work", []byte("kubeconfig")), wantName: "work-kubeconfig", wantKeys: []string{"value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.secret.Name).To(Equal(tt.wantName))
			g.Expect(tt.secret.Namespace).To(Equal("team-a"))
			g.Expect(tt.secret.Type).To(Equal(clusterv1.ClusterSecretType))
			g.Expect(tt.secret.Labels).To(Equal(map[string]string{clusterv1.ClusterNameLabel: "work"}))
			g.Expect(tt.secret.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
				APIVersion: "controlplane.flotilla.dev/v1alpha1", Kind: "LocalControlPlane", Name: "work-cp", UID: "lcp-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}))
			g.Expect(tt.secret.Data).To(HaveLen(len(tt.wantKeys)))
			for _, key := range tt.wantKeys {
				g.Expect(tt.secret.Data).To(HaveKey(key))
			}

			ac := secretApplyConfiguration(tt.secret)
			g.Expect(*ac.Name).To(Equal(tt.wantName))
			g.Expect(*ac.Type).To(Equal(clusterv1.ClusterSecretType))
			g.Expect(ac.OwnerReferences).To(HaveLen(1))
			g.Expect(*ac.OwnerReferences[0].Controller).To(BeTrue())
			g.Expect(ac.Data).To(Equal(tt.secret.Data))
		})
	}
}

func TestAdminKubeconfigIsNamedLikeCAPIsAndTrustsTheCA(t *testing.T) {
	g := NewWithT(t)
	ca := testCA(t)

	data, err := adminKubeconfig("work", "https://127.0.0.1:20123", *ca)
	g.Expect(err).NotTo(HaveOccurred())

	config, err := clientcmd.Load(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(config.CurrentContext).To(Equal("work-admin@work"))
	g.Expect(config.Contexts["work-admin@work"].Cluster).To(Equal("work"))
	g.Expect(config.Contexts["work-admin@work"].AuthInfo).To(Equal("work-admin"))
	g.Expect(config.Clusters["work"].Server).To(Equal("https://127.0.0.1:20123"))
	g.Expect(sameCertificate(config.Clusters["work"].CertificateAuthorityData, ca.Cert)).To(BeTrue())

	clientCert, err := certs.DecodeCertPEM(config.AuthInfos["work-admin"].ClientCertificateData)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clientCert.Subject.Organization).To(ConsistOf("system:masters"))
	g.Expect(clientCert.CheckSignatureFrom(ca.Cert)).To(Succeed())
}

func TestKubeconfigCurrent(t *testing.T) {
	ca := testCA(t)
	otherCA := testCA(t)
	data, err := adminKubeconfig("work", "https://127.0.0.1:20123", *ca)
	if err != nil {
		t.Fatal(err)
	}
	secret := kubeconfigSecret(testLCP(), "work", data)
	tests := []struct {
		name   string
		server string
		ca     *pki.KeyPair
		now    time.Time
		want   bool
	}{
		{name: "a fresh kubeconfig for this endpoint and CA is current", server: "https://127.0.0.1:20123", ca: ca, now: time.Now(), want: true},
		{name: "a kubeconfig for another endpoint is not", server: "https://127.0.0.1:20999", ca: ca, now: time.Now()},
		{name: "a kubeconfig trusting another CA is not", server: "https://127.0.0.1:20123", ca: otherCA, now: time.Now()},
		{name: "a kubeconfig past half its certificate's life is due for renewal", server: "https://127.0.0.1:20123", ca: ca, now: time.Now().Add(200 * 24 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := kubeconfigCurrent(secret, "work", tt.server, *tt.ca, tt.now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSecretUpToDate(t *testing.T) {
	ca := testCA(t)
	desired := caSecret(testLCP(), "work", *ca)
	tests := []struct {
		name   string
		mutate func(*corev1.Secret)
		want   bool
	}{
		{name: "the same Secret is up to date", mutate: func(*corev1.Secret) {}, want: true},
		{name: "extra labels do not matter", mutate: func(s *corev1.Secret) { s.Labels["extra"] = "x" }, want: true},
		{name: "other data is not up to date", mutate: func(s *corev1.Secret) { s.Data["tls.key"] = []byte("other") }},
		{name: "a missing label is not up to date", mutate: func(s *corev1.Secret) { delete(s.Labels, clusterv1.ClusterNameLabel) }},
		{name: "another controller is not up to date", mutate: func(s *corev1.Secret) { s.OwnerReferences[0].UID = "someone-else" }},
		{name: "another type is not up to date", mutate: func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			existing := desired.DeepCopy()
			tt.mutate(existing)
			g.Expect(secretUpToDate(existing, desired)).To(Equal(tt.want))
		})
	}
}

func TestKeyPairFromSecretRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ca := testCA(t)

	got, err := keyPairFromSecret(caSecret(testLCP(), "work", *ca))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Cert.Equal(ca.Cert)).To(BeTrue())

	_, err = keyPairFromSecret(&corev1.Secret{})
	g.Expect(err).To(HaveOccurred())
}
