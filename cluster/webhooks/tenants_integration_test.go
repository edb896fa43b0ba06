package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/utils/ptr"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// The attacks of issue 11, tried by a tenant: a user with a real client certificate signed by
// the API server's CA and nothing but the flotilla-cluster-creator role in one namespace. Every
// refusal comes from the API server, through the webhooks as the manager serves them.

// warnings collects the warnings the API server sends a ctrlclient.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.text...)
}

// user is a person with a client certificate and the cluster creator role in namespace.
type user struct {
	client   ctrlclient.Client
	warnings *warnings
}

// creator returns a new user name (in groups) bound to flotilla-cluster-creator in namespace,
// with a client that collects the warnings the API server sends.
func creator(t *testing.T, namespace, name string, groups ...string) user {
	t.Helper()
	g := NewWithT(t)
	u, err := env.AddClusterCreator(namespace, name, groups...)
	g.Expect(err).NotTo(HaveOccurred())
	w := &warnings{}
	cfg := rest.CopyConfig(u.Config)
	cfg.WarningHandler = w
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return user{client: c, warnings: w}
}

// theManagementCluster creates the management Cluster of the API server once, as the CLI does
// with the admin kubeconfig, and returns its namespace and name.
var theManagementCluster = sync.OnceValues(func() (ctrlclient.ObjectKey, error) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mgmt-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return ctrlclient.ObjectKey{}, err
	}
	c := localCluster(ns.Name, "mgmt", "md-0")
	c.Spec.Management, c.Spec.ManagementCluster.Name = true, ""
	return ctrlclient.ObjectKeyFromObject(c), env.Client.Create(ctx, c)
})

func managementCluster(t *testing.T) ctrlclient.ObjectKey {
	t.Helper()
	key, err := theManagementCluster()
	if err != nil {
		t.Fatalf("creating the management cluster: %v", err)
	}
	return key
}

// refused checks that err is the API server's Invalid answer naming field, with text.
func refused(g Gomega, err error, field, text string) {
	g.Expect(causes(g, err)).To(ContainElement(field))
	g.Expect(err.Error()).To(ContainSubstring(text))
}

// Attack 1 at the door: a tenant cannot take the name of another namespace's Cluster (which
// names its packages namespace, PackageBundleController, data directory and GitOps path).
// packages/tenants_test.go shows what a same-named Cluster could have deleted, and that the
// lifecycle controller's UID rule holds when two Clusters get past this check at once.
func TestATenantCannotTakeTheNameOfAnotherNamespacesCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	managementCluster(t)
	admins, tenantNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-names")
	g.Expect(env.Client.Create(ctx, localCluster(admins, "taken", "md-0"))).To(Succeed())

	for _, dryRun := range []bool{true, false} {
		var opts []ctrlclient.CreateOption
		if dryRun {
			opts = append(opts, ctrlclient.DryRunAll)
		}
		err := tenant.client.Create(ctx, localCluster(tenantNS, "taken", "md-0"), opts...)
		refused(g, err, "metadata.name", `"taken" is taken by a Cluster in namespace "`+admins+`"`)
	}
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "taken"}, &flotillav1.Cluster{}))).To(BeTrue())
	g.Expect(tenant.client.Create(ctx, localCluster(tenantNS, "tenants-own", "md-0"))).To(Succeed(), "a free name is hers")
}

// Attack 2: only admins create management clusters, or choose which management cluster manages
// a cluster.
func TestOnlyAdminsCreateManagementClusters(t *testing.T) {
	ctx := context.Background()
	mgmt := managementCluster(t)
	tenantNS := env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-a")
	management := func(ns, name string) *flotillav1.Cluster {
		c := localCluster(ns, name, "md-0")
		c.Spec.Management, c.Spec.ManagementCluster.Name = true, ""
		return c
	}

	t.Run("a tenant's management Cluster is refused, also as a server-side dry run, naming the field and the rule", func(t *testing.T) {
		g := NewWithT(t)
		err := tenant.client.Create(ctx, management(tenantNS, "tenant-mgmt"), ctrlclient.DryRunAll)
		refused(g, err, "spec.management", "only an admin may create a management cluster")
		err = tenant.client.Create(ctx, management(tenantNS, "tenant-mgmt"))
		refused(g, err, "spec.management", "only an admin may create a management cluster")
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "tenant-mgmt"}, &flotillav1.Cluster{}))).To(BeTrue())
	})

	t.Run("a tenant's workload Cluster is managed by the management cluster of the API server, and she cannot say otherwise", func(t *testing.T) {
		g := NewWithT(t)
		c := localCluster(tenantNS, "tenant-w1", "md-0")
		c.Spec.ManagementCluster.Name = "elsewhere"
		refused(g, tenant.client.Create(ctx, c, ctrlclient.DryRunAll), "spec.managementCluster.name",
			`only an admin may name a management cluster other than this API server's ("mgmt")`)

		c.Spec.ManagementCluster.Name = ""
		g.Expect(tenant.client.Create(ctx, c)).To(Succeed())
		g.Expect(c.Spec.ManagementCluster.Name).To(Equal(mgmt.Name), "defaulted by the webhook")

		changed := c.DeepCopy()
		changed.Spec.ManagementCluster.Name = "elsewhere"
		refused(g, tenant.client.Update(ctx, changed, ctrlclient.DryRunAll), "spec.managementCluster.name", "only an admin may change it")
		refused(g, tenant.client.Update(ctx, changed), "spec.managementCluster.name", "only an admin may change it")

		scaled := c.DeepCopy()
		scaled.Spec.WorkerNodeGroups[0].Count = 2
		g.Expect(tenant.client.Update(ctx, scaled)).To(Succeed(), "what a tenant may change, she changes")
	})

	t.Run("an admin of the flotilla-admins group may create a management cluster, but not a second one in one API server", func(t *testing.T) {
		g := NewWithT(t)
		adminNS := env.NewNamespace(t)
		carol := creator(t, adminNS, "carol", clusterwebhooks.AdminsGroup)
		err := carol.client.Create(ctx, management(adminNS, "second-mgmt"), ctrlclient.DryRunAll)
		refused(g, err, "spec.management", "this API server already holds management Cluster "+mgmt.String())
		g.Expect(err.Error()).NotTo(ContainSubstring("only an admin"), "carol is an admin")
		err = env.Client.Create(ctx, management(adminNS, "second-mgmt"))
		refused(g, err, "spec.management", "this API server already holds management Cluster")
	})

	t.Run("an admin may change the management cluster of a cluster (as clusterctl move does)", func(t *testing.T) {
		g := NewWithT(t)
		c := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "tenant-w1"}, c)).To(Succeed())
		c.Spec.ManagementCluster.Name = "elsewhere"
		g.Expect(env.Client.Update(ctx, c, ctrlclient.DryRunAll)).To(Succeed())
	})
}

// Attack 4: a tenant's local control plane serves on loopback only.
func TestATenantsLocalControlPlaneServesOnLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	managementCluster(t)
	tenantNS, adminNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-bind")
	withHost := func(ns, name, host string) *flotillav1.Cluster {
		c := localCluster(ns, name, "md-0")
		c.Spec.ManagementCluster.Name = ""
		c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: host, Port: 16443}
		return c
	}

	t.Run("binding every interface, or another address, is refused naming the field", func(t *testing.T) {
		for _, host := range []string{"0.0.0.0", "::", "192.168.1.10", "kubernetes.example.com"} {
			g := NewWithT(t)
			refused(g, tenant.client.Create(ctx, withHost(tenantNS, "exposed", host), ctrlclient.DryRunAll),
				"spec.controlPlane.endpoint.host", "only an admin may let a local control plane serve on \""+host+"\"")
		}
		g := NewWithT(t)
		refused(g, tenant.client.Create(ctx, withHost(tenantNS, "exposed", "0.0.0.0")), "spec.controlPlane.endpoint.host", "which is not a loopback address")
	})

	t.Run("nor can she set it once the cluster exists", func(t *testing.T) {
		g := NewWithT(t)
		c := withHost(tenantNS, "later", "")
		c.Spec.ControlPlane.Endpoint = nil
		g.Expect(tenant.client.Create(ctx, c)).To(Succeed())
		c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "0.0.0.0", Port: 16443}
		refused(g, tenant.client.Update(ctx, c), "spec.controlPlane.endpoint.host", "which is not a loopback address")
	})

	t.Run("a loopback host is hers to choose; another host an admin's", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.client.Create(ctx, withHost(tenantNS, "looped", "127.0.0.1"), ctrlclient.DryRunAll)).To(Succeed())
		g.Expect(env.Client.Create(ctx, withHost(adminNS, "exposed-by-admin", "0.0.0.0"), ctrlclient.DryRunAll)).To(Succeed())
	})
}

// Attack 5: a tenant cannot open a door from her nodes' network to another port of this
// machine's loopback (here the management cluster's own API server) by naming it as her real
// nodes' image mirror: each node reaches its mirror's port at 127.0.0.1 through its gateway.
func TestATenantCannotForwardAnotherLoopbackPortIntoHerNodes(t *testing.T) {
	ctx := context.Background()
	tenantNS, adminNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-mirror")
	apiServer, err := url.Parse(env.Config.Host)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	target := "127.0.0.1:" + apiServer.Port()
	datacenter := func(ns, name, mirror string) *infrav1.LocalDatacenterConfig {
		return &infrav1.LocalDatacenterConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: infrav1.LocalDatacenterConfigSpec{ImageMirror: mirror}}
	}
	onlyAdmins := fmt.Sprintf("only an admin may forward another port of this machine (%q) into the nodes' network", target)

	t.Run("naming another port is refused, naming the field", func(t *testing.T) {
		g := NewWithT(t)
		refused(g, tenant.client.Create(ctx, datacenter(tenantNS, "door", target), ctrlclient.DryRunAll), "spec.imageMirror", onlyAdmins)
		refused(g, tenant.client.Create(ctx, datacenter(tenantNS, "door", "localhost:"+apiServer.Port())), "spec.imageMirror", "only an admin may")
	})

	t.Run("nor can she change her mirror to it", func(t *testing.T) {
		g := NewWithT(t)
		dc := datacenter(tenantNS, "later", "")
		g.Expect(tenant.client.Create(ctx, dc)).To(Succeed())
		dc.Spec.ImageMirror = target
		refused(g, tenant.client.Update(ctx, dc), "spec.imageMirror", onlyAdmins)
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(dc), dc)).To(Succeed())
		g.Expect(dc.Spec.ImageMirror).To(Equal(infrav1.DefaultImageMirror), "defaulted by the schema, unchanged")
	})

	t.Run("the embedded registry is hers to name; another port an admin's", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.client.Create(ctx, datacenter(tenantNS, "embedded", infrav1.DefaultImageMirror), ctrlclient.DryRunAll)).To(Succeed())
		g.Expect(env.Client.Create(ctx, datacenter(adminNS, "admins-mirror", "127.0.0.1:5002"), ctrlclient.DryRunAll)).To(Succeed())
	})
}

// A tenant cannot take a range this machine reaches, its LAN beyond the default route say, for
// her node network: the machine would route it to her bridge, and every program of the machine
// would send her nodes what it meant for the LAN. She picks inside nodenet.DefaultPool.
func TestATenantCannotRouteTheMachinesLANToHerNodes(t *testing.T) {
	ctx := context.Background()
	tenantNS, adminNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-network")
	datacenter := func(ns, name, network string) *infrav1.LocalDatacenterConfig {
		return &infrav1.LocalDatacenterConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: network}}
	}
	const outsidePool = "only an admin may name a node network outside 10.200.0.0/16 (192.168.1.0/24"

	t.Run("a range the machine routes through its default route is refused, naming the field", func(t *testing.T) {
		g := NewWithT(t)
		refused(g, tenant.client.Create(ctx, datacenter(tenantNS, "lan", "192.168.1.0/24"), ctrlclient.DryRunAll), "spec.nodeNetwork", outsidePool)
		refused(g, tenant.client.Create(ctx, datacenter(tenantNS, "wide", "10.0.0.0/8"), ctrlclient.DryRunAll), "spec.nodeNetwork", "only an admin may")
	})

	t.Run("nor can she change her node network to it", func(t *testing.T) {
		g := NewWithT(t)
		dc := datacenter(tenantNS, "later", "10.200.9.0/24")
		g.Expect(tenant.client.Create(ctx, dc)).To(Succeed())
		dc.Spec.NodeNetwork = "192.168.1.0/24"
		refused(g, tenant.client.Update(ctx, dc), "spec.nodeNetwork", outsidePool)
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(dc), dc)).To(Succeed())
		g.Expect(dc.Spec.NodeNetwork).To(Equal("10.200.9.0/24"))
	})

	t.Run("the pool is hers to pick from; other ranges an admin's", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.client.Create(ctx, datacenter(tenantNS, "pool", "10.200.10.0/24"), ctrlclient.DryRunAll)).To(Succeed())
		g.Expect(env.Client.Create(ctx, datacenter(adminNS, "admins-lan", "192.168.1.0/24"), ctrlclient.DryRunAll)).To(Succeed())
	})
}

// Attack 3, at the API server: a tenant can neither choose where a Metal API key is sent nor
// which Secret holds it, nor name an identity that does not allow her namespace. Her own server
// never hears from anyone. infrastructure/packet/tenants_test.go shows the provider itself
// sending nothing for a cluster whose identity does not allow its namespace.
func TestATenantCannotSendAnInfrastructureKeyAnywhere(t *testing.T) {
	ctx := context.Background()
	tenantNS, adminNS := env.NewNamespace(t), env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-keys")

	var mu sync.Mutex
	var seen []string
	hers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get(metal.AuthHeader))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hers.Close)
	hersURL := hers.URL + "/metal/v1"

	identity := func(name, apiURL string, allowed ...string) *infrav1.PacketClusterIdentity {
		return &infrav1.PacketClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: infrav1.PacketClusterIdentitySpec{APIURL: apiURL, CredentialsSecretName: "packet-credentials",
				AllowedNamespaces: &infrav1.AllowedNamespaces{List: allowed}},
		}
	}
	datacenter := func(identityName string) *infrav1.PacketDatacenterConfig {
		dc := &infrav1.PacketDatacenterConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "metal-" + identityName},
			Spec:       infrav1.PacketDatacenterConfigSpec{ProjectID: "p", Metro: "da"},
		}
		if identityName != "" {
			dc.Spec.IdentityRef = &infrav1.PacketClusterIdentityReference{Name: identityName}
		}
		return dc
	}

	t.Run("she may not write an identity, whatever it points at", func(t *testing.T) {
		g := NewWithT(t)
		err := tenant.client.Create(ctx, identity("tenants-own", hersURL, tenantNS))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	})

	t.Run("she may not write or read a Secret in flotilla-system", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infrav1.PacketCredentialsNamespace}})).
			To(Or(Succeed(), MatchError(ContainSubstring("already exists"))))
		err := tenant.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: "mine"}})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		err = tenant.client.Get(ctx, ctrlclient.ObjectKey{Namespace: infrav1.PacketCredentialsNamespace, Name: infrav1.DefaultPacketCredentialsSecret}, &corev1.Secret{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	})

	t.Run("a datacenter config no longer says where the key goes or which Secret holds it", func(t *testing.T) {
		g := NewWithT(t)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": infrav1.GroupVersion.String(), "kind": "PacketDatacenterConfig",
			"metadata": map[string]any{"namespace": tenantNS, "name": "pointed"},
			"spec": map[string]any{"apiURL": hersURL, "credentialsSecretName": infrav1.DefaultPacketCredentialsSecret,
				"projectID": "p", "metro": "da", "identityRef": map[string]any{"name": "not-yet"}},
		}}
		err := tenant.client.Create(ctx, u.DeepCopy(), ctrlclient.FieldValidation("Strict"))
		g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(And(ContainSubstring(`unknown field "spec.apiURL"`), ContainSubstring(`unknown field "spec.credentialsSecretName"`)))

		// Without strict validation the API server drops what the schema does not have.
		g.Expect(tenant.client.Create(ctx, u)).To(Succeed())
		stored := &infrav1.PacketDatacenterConfig{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "pointed"}, stored)).To(Succeed())
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(infrav1.GroupVersion.WithKind("PacketDatacenterConfig"))
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "pointed"}, raw)).To(Succeed())
		g.Expect(raw.Object["spec"]).NotTo(HaveKey("apiURL"))
		g.Expect(raw.Object["spec"]).NotTo(HaveKey("credentialsSecretName"))
		g.Expect(strings.Join(tenant.warnings.all(), "\n")).To(ContainSubstring(`PacketClusterIdentity "not-yet" does not exist yet`),
			"naming an identity that does not exist yet is admitted, with a warning")
	})

	t.Run("naming an admin's identity that does not allow her namespace is refused, naming the identity and the rule", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, identity("h9-admins-metal", hersURL, adminNS))).To(Succeed())
		err := tenant.client.Create(ctx, datacenter("h9-admins-metal"))
		refused(g, err, "spec.identityRef.name", `PacketClusterIdentity "h9-admins-metal" does not allow namespace "`+tenantNS+`": spec.allowedNamespaces.list names `+adminNS)
	})

	t.Run("an identity that allows her namespace is hers to name", func(t *testing.T) {
		g := NewWithT(t)
		shared := identity("h9-shared-metal", "https://api.equinix.com/metal/v1")
		shared.Spec.AllowedNamespaces = &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": tenantNS}}}
		g.Expect(env.Client.Create(ctx, shared)).To(Succeed())
		g.Expect(tenant.client.Create(ctx, datacenter("h9-shared-metal"))).To(Succeed())
	})

	t.Run("even an admin cannot have a key sent in the clear off this machine", func(t *testing.T) {
		g := NewWithT(t)
		err := env.Client.Create(ctx, identity("h9-cleartext", "http://metal.example.com/metal/v1", adminNS))
		refused(g, err, "spec.apiURL", "would send the API key in the clear")
	})

	mu.Lock()
	defer mu.Unlock()
	NewWithT(t).Expect(seen).To(BeEmpty(), "nothing was ever sent to the tenant's server, with or without a key")
}

// Issue 21: real nodes run on the management cluster's machine, so a tenant gets them only from
// an admin, with a TenantQuota naming her namespace, which also bounds her clusters and worker
// machines. She cannot grant herself one.
func TestATenantGetsRealNodesAndMachinesOnlyAsAnAdminGrants(t *testing.T) {
	ctx := context.Background()
	managementCluster(t)
	tenantNS := env.NewNamespace(t)
	tenant := creator(t, tenantNS, "tenant-quota")
	withNodes := func(name string, simulated, real int32) *flotillav1.Cluster {
		c := localCluster(tenantNS, name, "sim")
		c.Spec.WorkerNodeGroups[0].Count = simulated
		c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{
			Name: "real", Count: real, Nodes: flotillav1.RealNodes,
			MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"},
		})
		return c
	}
	grant := &flotillav1.TenantQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "grant-" + tenantNS},
		Spec:       flotillav1.TenantQuotaSpec{Namespaces: []string{tenantNS}, Clusters: ptr.To[int32](2), Workers: ptr.To[int32](4), RealNodes: 1},
	}

	t.Run("without a grant a real node is refused, naming the field and the way", func(t *testing.T) {
		g := NewWithT(t)
		for _, opts := range [][]ctrlclient.CreateOption{{ctrlclient.DryRunAll}, nil} {
			refused(g, tenant.client.Create(ctx, withNodes("t1", 1, 1), opts...), "spec.workerNodeGroups",
				"may have 0 real nodes altogether and the others have 0: this cluster may have 0, not 1; real nodes run on the management cluster's machine, so only an admin grants them, with a TenantQuota")
		}
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "t1"}, &flotillav1.Cluster{}))).To(BeTrue())
	})

	t.Run("she cannot grant herself real nodes", func(t *testing.T) {
		g := NewWithT(t)
		err := tenant.client.Create(ctx, grant.DeepCopy())
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a TenantQuota: %v", err)
	})

	t.Run("an admin's grant lets her have what it says, and not more", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, grant)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), grant) })
		// The webhook reads quotas uncached: the grant counts at once.
		g.Expect(tenant.client.Create(ctx, withNodes("t1", 1, 1))).To(Succeed())

		refused(g, tenant.client.Create(ctx, withNodes("t2", 0, 1)), "spec.workerNodeGroups",
			"may have 1 real nodes altogether and the others have 1: this cluster may have 0, not 1")
		refused(g, tenant.client.Create(ctx, withNodes("t2", 3, 0)), "spec.workerNodeGroups",
			"may have 4 worker machines altogether (TenantQuota) and the others have 2: this cluster may have 2, not 3")

		t1 := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: tenantNS, Name: "t1"}, t1)).To(Succeed())
		t1.Spec.WorkerNodeGroups[1].Count = 2
		refused(g, tenant.client.Update(ctx, t1), "spec.workerNodeGroups", "this cluster may have 1, not 2")

		g.Expect(tenant.client.Create(ctx, withNodes("t2", 2, 0))).To(Succeed())
		refused(g, tenant.client.Create(ctx, withNodes("t3", 0, 0)), "metadata.namespace", "may hold 2 Clusters (TenantQuota) and holds 2 already")
	})

	t.Run("an admin is held to no quota", func(t *testing.T) {
		NewWithT(t).Expect(env.Client.Create(ctx, withNodes("t3", 10, 5), ctrlclient.DryRunAll)).To(Succeed())
	})
}

// Issue 21: a tenant role bound in the management cluster's namespace (the GitOps applier of the
// management cluster's repository has one) changes nothing of the management Cluster: its spec
// and its deletion are an admin's.
func TestATenantRoleInTheManagementNamespaceCannotChangeTheManagementCluster(t *testing.T) {
	ctx := context.Background()
	key := managementCluster(t)
	writer := creator(t, key.Namespace, "repository-writer")
	g := NewWithT(t)

	mgmt := &flotillav1.Cluster{}
	g.Expect(writer.client.Get(ctx, key, mgmt)).To(Succeed())
	changed := mgmt.DeepCopy()
	changed.Spec.WorkerNodeGroups[0].Count = 5
	refused(g, writer.client.Update(ctx, changed, ctrlclient.DryRunAll), "spec", "only an admin may change a management cluster")
	refused(g, writer.client.Update(ctx, changed), "spec", "only an admin may change a management cluster")

	unchanged := mgmt.DeepCopy()
	unchanged.Labels = map[string]string{"team": "platform"}
	g.Expect(writer.client.Update(ctx, unchanged, ctrlclient.DryRunAll)).To(Succeed(), "metadata is not the spec")

	err := writer.client.Delete(ctx, mgmt, ctrlclient.DryRunAll)
	refused(g, err, "spec.management", "only an admin may delete a management cluster")
	g.Expect(writer.client.Delete(ctx, mgmt)).NotTo(Succeed())
	g.Expect(env.Client.Get(ctx, key, mgmt)).To(Succeed())
	g.Expect(mgmt.DeletionTimestamp).To(BeNil())
	g.Expect(mgmt.Spec.WorkerNodeGroups[0].Count).To(Equal(int32(1)))

	g.Expect(env.Client.Update(ctx, changed, ctrlclient.DryRunAll)).To(Succeed(), "an admin changes it")

	// Nor its configs: kube-controller-manager off, or other machines, would change it as well.
	dc := &infrav1.LocalDatacenterConfig{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: mgmt.Spec.DatacenterRef.Name}}
	if err := env.Client.Create(ctx, dc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the management cluster's datacenter config: %v", err)
	}
	g.Expect(writer.client.Get(ctx, ctrlclient.ObjectKeyFromObject(dc), dc)).To(Succeed())
	dc.Spec.ControllerManager = new(false)
	refused(g, writer.client.Update(ctx, dc), "spec", "only an admin may change or delete a config of management cluster "+key.Name)
	refused(g, writer.client.Delete(ctx, dc), "spec", "only an admin may change or delete a config of management cluster")
	g.Expect(env.Client.Update(ctx, dc, ctrlclient.DryRunAll)).To(Succeed(), "an admin changes it")

	own := &infrav1.LocalDatacenterConfig{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "writers-own"}}
	g.Expect(writer.client.Create(ctx, own)).To(Succeed())
	own.Spec.ControllerManager = new(false)
	g.Expect(writer.client.Update(ctx, own)).To(Succeed(), "a config no management cluster names is the writers'")
	g.Expect(writer.client.Delete(ctx, own)).To(Succeed())
}
