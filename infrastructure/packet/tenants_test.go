package packet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
)

// tenantClient returns a client of a new user name, authenticated by a client certificate the
// API server trusts, with nothing but the flotilla-cluster-creator role in namespace.
func tenantClient(t *testing.T, namespace, name string) ctrlclient.Client {
	t.Helper()
	g := NewWithT(t)
	u, err := env.AddClusterCreator(namespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := ctrlclient.New(u.Config, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// recorder serves h and records what every request carried in X-Auth-Token.
type recorder struct {
	mu     sync.Mutex
	tokens []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.tokens = append(r.tokens, req.Header.Get(metal.AuthHeader))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tokens...)
}

// Attack 3, through the provider: a tenant's Packet cluster names an admin's identity that does
// not allow her namespace (it got past the webhook because the identity did not exist yet, or
// allowed her namespace then). The provider makes no request with the identity's key, and says
// why on the PacketCluster and on her Cluster; her own server, which she could once name as the
// API, hears nothing; once the admin allows her namespace, the key goes to the admin's API.
func TestATenantsClusterNeverSendsAKeyItsIdentityDoesNotAllow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startManager(t, "cluster") // the Flotilla Cluster reconciler and webhooks; the Packet reconcilers run in the package's manager
	g.Eventually(func() error {
		return env.Client.Get(ctx, ctrlclient.ObjectKey{Name: "flotilla-manager-cluster"}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	}, timeout).Should(Succeed())

	tenantNS, adminNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := tenantClient(t, tenantNS, "tenant-metal")
	admins := &recorder{}
	adminsAPI := httptest.NewServer(admins.wrap(metalsim.New(metalsim.Options{APIKey: apiKey})))
	t.Cleanup(adminsAPI.Close)
	hers := &recorder{}
	hersAPI := httptest.NewServer(hers.wrap(http.NotFoundHandler()))
	t.Cleanup(hersAPI.Close)
	identityName := "late-" + tenantNS

	// What `flotilla create cluster -f metal.yaml` applies as the tenant, naming an identity no
	// admin has made yet: admitted, with a warning.
	machines := flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: "metal"}
	for _, obj := range []ctrlclient.Object{
		&infrav1.PacketDatacenterConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "metal"},
			Spec: infrav1.PacketDatacenterConfigSpec{IdentityRef: &infrav1.PacketClusterIdentityReference{Name: identityName},
				ProjectID: string(uuid.NewUUID()), Metro: "da"},
		},
		&infrav1.PacketMachineConfig{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "metal"}, Spec: infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86"}},
		&flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "tenant-metal"},
			Spec: flotillav1.ClusterSpec{
				KubernetesVersion: "1.36",
				ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1, MachineGroupRef: &machines},
				DatacenterRef:     flotillav1.Ref{Kind: packetspec.DatacenterConfigKind, Name: "metal"},
				WorkerNodeGroups:  []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 1, MachineGroupRef: machines}},
			},
		},
	} {
		g.Expect(tenant.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "tenant-metal"}}
	g.Eventually(func(g Gomega) {
		c := readyOf(g, get(g, pc))
		g.Expect(c.Reason).To(Equal(infrav1.CredentialsUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring(`PacketClusterIdentity "` + identityName + `" does not exist`))
	}, timeout).Should(Succeed())

	// The admin makes the identity, for her own namespace only.
	identity := &infrav1.PacketClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: identityName},
		Spec: infrav1.PacketClusterIdentitySpec{APIURL: adminsAPI.URL + metalsim.BasePath, CredentialsSecretName: goodSecret,
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{adminNS}}},
	}
	g.Expect(env.Client.Create(ctx, identity)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), identity) })

	t.Run("the PacketCluster and the tenant's Cluster say that the identity does not allow her namespace", func(t *testing.T) {
		g := NewWithT(t)
		want := `PacketClusterIdentity "` + identityName + `" does not allow namespace "` + tenantNS + `": spec.allowedNamespaces.list names ` + adminNS
		g.Eventually(func(g Gomega) {
			c := readyOf(g, get(g, pc))
			g.Expect(c.Reason).To(Equal(infrav1.IdentityNotAllowedReason))
			g.Expect(c.Message).To(ContainSubstring(want))
			hersToo := &flotillav1.Cluster{}
			g.Expect(tenant.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "tenant-metal"}, hersToo)).To(Succeed())
			ready := meta.FindStatusCondition(hersToo.Status.Conditions, flotillav1.ControlPlaneReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Message).To(ContainSubstring(want))
		}, timeout).Should(Succeed())
		g.Consistently(admins.seen, "2s").Should(BeEmpty(), "no request was made with the admin's key")
	})

	t.Run("she cannot point her datacenter config at another identity that does not allow her either", func(t *testing.T) {
		g := NewWithT(t)
		dc := &infrav1.PacketDatacenterConfig{}
		g.Expect(tenant.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "metal"}, dc)).To(Succeed())
		dc.Spec.IdentityRef.Name = identityName // unchanged spec: allowed; now a real change
		dc.Spec.Facility = "da11"
		err := tenant.Update(ctx, dc)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("does not allow namespace"))
	})

	t.Run("once the admin allows her namespace, the key goes to the admin's API and nowhere else", func(t *testing.T) {
		g := NewWithT(t)
		current := get(g, &infrav1.PacketClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: identityName}})
		current.Spec.AllowedNamespaces.List = append(current.Spec.AllowedNamespaces.List, tenantNS)
		g.Expect(env.Client.Update(ctx, current)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, pc).Status.ElasticIP).NotTo(BeNil())
		}, timeout).Should(Succeed())
		g.Expect(admins.seen()).To(HaveEach(apiKey))
	})

	NewWithT(t).Expect(hers.seen()).To(BeEmpty(), "the tenant's own server never received a request, so never a key")
}
