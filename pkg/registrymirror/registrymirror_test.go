package registrymirror

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestResolveReadsTheMirrorsOwnSecretsAndNamesTheFieldOfABadSetting(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		secret("login", map[string]string{"username": "u", "password": "p", "ca.crt": "ca"}),
		secret("half", map[string]string{"username": "u"}),
		secret("no-ca", nil),
	).Build()
	tests := []struct {
		name    string
		s       Settings
		want    *registryconn.Mirror
		wantErr string
	}{
		{name: "credentials and CA from one Secret", s: Settings{Registry: "m.example/copies", Namespace: "team", CredentialsSecret: "login"},
			want: &registryconn.Mirror{Registry: "m.example/copies", Connection: registryconn.Config{Username: "u", Password: "p", CAData: []byte("ca")}}},
		{name: "a scheme is refused", s: Settings{Registry: "https://m.example"}, wantErr: "spec.registryMirror.registry: registry \"https://m.example\""},
		{name: "a missing Secret is named", s: Settings{Registry: "m.example", Namespace: "team", CredentialsSecret: "gone"}, wantErr: "reading the mirror's Secret team/gone"},
		{name: "a user without password is refused", s: Settings{Registry: "m.example", Namespace: "team", CredentialsSecret: "half"}, wantErr: "needs both username and password"},
		{name: "a CA Secret without ca.crt is refused", s: Settings{Registry: "m.example", Namespace: "team", CASecret: "no-ca"}, wantErr: "has no key ca.crt"},
		{name: "plain HTTP with a CA is refused", s: Settings{Registry: "m.example", Namespace: "team", CredentialsSecret: "login", PlainHTTP: true}, wantErr: "plainHTTP speaks no TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.s.Field = "spec.registryMirror"
			m, err := Resolve(context.Background(), c, tt.s)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m).To(Equal(tt.want))
		})
	}
}

func TestAnObjectsOwnMirrorOverridesTheManagementClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	m, err := Of(ctx, c, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).To(BeNil(), "no ConfigMap: no mirror")

	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Key.Namespace, Name: Key.Name},
		Data: map[string]string{flotillav1.RegistryMirrorRegistryKey: "127.0.0.1:5002", flotillav1.RegistryMirrorPlainHTTPKey: "true"}})).To(Succeed())
	m, err = Of(ctx, c, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).To(Equal(&registryconn.Mirror{Registry: "127.0.0.1:5002", Connection: registryconn.Config{PlainHTTP: true}}))

	m, err = Of(ctx, c, &Settings{Field: "spec.registryMirror", Registry: "own.example"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Registry).To(Equal("own.example"))
}
