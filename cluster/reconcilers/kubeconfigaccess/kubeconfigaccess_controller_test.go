package kubeconfigaccess_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/reconcilers/kubeconfigaccess"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the API server, installs the ClusterRole flotilla-cluster-creator as the CLI does on
// a management cluster, runs the reconciler in a real manager, and runs the tests. The manager
// stops before the API server, which otherwise waits for its watches.
func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		}
	}()
	if err := config.InstallClusterCreatorRBAC(context.Background(), e.Client); err != nil {
		fmt.Fprintf(os.Stderr, "installing RBAC: %v\n", err)
		return 1
	}
	_, stop, err := e.StartManager(func(_ context.Context, mgr ctrl.Manager) error {
		return (&kubeconfigaccess.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return m.Run()
}

func newCluster(namespace, name string, management bool) *flotillav1.Cluster {
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: flotillav1.ClusterSpec{
			Management:        management,
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	return c
}

func newSecret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{"value": []byte("not really a kubeconfig")},
	}
}

func creatorBinding(namespace, name string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: config.ClusterCreatorRoleName},
		Subjects:   subjects,
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// clientAs returns a client authenticated by a real client certificate of a new user.
func clientAs(t *testing.T, name string, groups ...string) ctrlclient.Client {
	t.Helper()
	u, err := env.AddUser(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrlclient.New(u.Config, ctrlclient.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getSecret(c ctrlclient.Client, namespace, name string) error {
	return c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{})
}

// TestClusterCreatorsReadExactlyTheKubeconfigsOfTheirNamespacesWorkloadClusters checks with the
// API server's own authorization what a user bound to flotilla-cluster-creator may read.
func TestClusterCreatorsReadExactlyTheKubeconfigsOfTheirNamespacesWorkloadClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := env.NewNamespace(t), env.NewNamespace(t)

	for _, obj := range []ctrlclient.Object{
		newCluster(ns, "w1", false), newCluster(ns, "mgmt", true), newCluster(other, "w2", false),
		newSecret(ns, "w1-kubeconfig"), newSecret(ns, "w1-ca"), newSecret(ns, "mgmt-kubeconfig"),
		newSecret(ns, "db-password"), newSecret(other, "w2-kubeconfig"),
		creatorBinding(ns, "alice-creates-clusters", userSubject("alice")),
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	alice, bob := clientAs(t, "alice"), clientAs(t, "bob")

	t.Run("the namespace gets a Role naming only the workload cluster's kubeconfig, bound to the creator", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			role := &rbacv1.Role{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, role)).To(Succeed())
			g.Expect(role.Rules).To(HaveExactElements(HaveField("ResourceNames", []string{"w1-kubeconfig"})))
			binding := &rbacv1.RoleBinding{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, binding)).To(Succeed())
			g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{userSubject("alice")}))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the creator can read the workload cluster's kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() error { return getSecret(alice, ns, "w1-kubeconfig") }, timeout, interval).Should(Succeed())
	})

	t.Run("the creator cannot read any other Secret, nor list them", func(t *testing.T) {
		for _, key := range []ctrlclient.ObjectKey{
			{Namespace: ns, Name: "w1-ca"},
			{Namespace: ns, Name: "mgmt-kubeconfig"},
			{Namespace: ns, Name: "db-password"},
			{Namespace: other, Name: "w2-kubeconfig"},
		} {
			t.Run(key.String(), func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(apierrors.IsForbidden(getSecret(alice, key.Namespace, key.Name))).To(BeTrue())
			})
		}
		g := NewWithT(t)
		g.Expect(apierrors.IsForbidden(alice.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(ns)))).To(BeTrue())
		g.Expect(apierrors.IsForbidden(alice.List(ctx, &corev1.ConfigMapList{}, ctrlclient.InNamespace(ns)))).To(BeTrue())
	})

	t.Run("a user bound to nothing reads no kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(apierrors.IsForbidden(getSecret(bob, ns, "w1-kubeconfig"))).To(BeTrue())
	})

	t.Run("a namespace without creators gets no Role", func(t *testing.T) {
		g := NewWithT(t)
		g.Consistently(func() error {
			return env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: other, Name: kubeconfigaccess.RoleName}, &rbacv1.Role{})
		}, time.Second, interval).Should(Satisfy(apierrors.IsNotFound))
	})

	t.Run("a new cluster's kubeconfig is granted as soon as the Cluster exists", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, newCluster(ns, "w3", false))).To(Succeed())
		g.Eventually(func(g Gomega) {
			role := &rbacv1.Role{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, role)).To(Succeed())
			g.Expect(role.Rules).To(HaveExactElements(HaveField("ResourceNames", []string{"w1-kubeconfig", "w3-kubeconfig"})))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a widened Role is put back", func(t *testing.T) {
		g := NewWithT(t)
		role := &rbacv1.Role{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, role)).To(Succeed())
		role.Rules[0].ResourceNames = append(role.Rules[0].ResourceNames, "w1-ca")
		g.Expect(env.Client.Update(ctx, role)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(role), role)).To(Succeed())
			g.Expect(role.Rules[0].ResourceNames).NotTo(ContainElement("w1-ca"))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("removing the creator's RoleBinding revokes the access", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Delete(ctx, creatorBinding(ns, "alice-creates-clusters"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, &rbacv1.Role{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Role: %v", err)
			err = env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: kubeconfigaccess.RoleName}, &rbacv1.RoleBinding{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RoleBinding: %v", err)
		}, timeout, interval).Should(Succeed())
		g.Eventually(func() error { return getSecret(alice, ns, "w1-kubeconfig") }, timeout, interval).Should(Satisfy(apierrors.IsForbidden))
	})
}
