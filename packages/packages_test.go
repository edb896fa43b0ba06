package packages_test

import (
	"context"
	"crypto/ecdsa"
	"io"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle"
)

var (
	defaultBundleOnce sync.Once
	// defaultBundleName is the bundle of the default source for Kubernetes 1.36: hello 0.2.0
	// and 0.1.0, and stack 0.1.0, which depends on hello.
	defaultBundleName string
)

// defaultBundle publishes the default source's bundle once.
func defaultBundle(t *testing.T) string {
	defaultBundleOnce.Do(func() {
		hello1 := helloChart("hello", "0.1.0").push(t, "")
		hello2 := helloChart("hello", "0.2.0").push(t, "")
		stack := helloChart("stack", "0.1.0").push(t, "")
		stack.Dependencies = []string{"hello"}
		defaultBundleName = pushBundle(t, bundleRepository, "1.36", 1, signingKey,
			pkg("hello", hello2, hello1), pkg("stack", stack))
	})
	if defaultBundleName == "" {
		t.Fatal("publishing the default bundle failed")
	}
	return defaultBundleName
}

func pbcOf(g Gomega, name string) *packagesv1.PackageBundleController {
	pbc := &packagesv1.PackageBundleController{}
	g.Expect(mgmt.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, pbc)).To(Succeed())
	return pbc
}

func packageOf(g Gomega, cluster, name string) *packagesv1.Package {
	p := &packagesv1.Package{}
	g.Expect(mgmt.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: packagesv1.ClusterNamespace(cluster), Name: name}, p)).To(Succeed())
	return p
}

func readyOf(g Gomega, conds []metav1.Condition) metav1.Condition {
	c := meta.FindStatusCondition(conds, packagesv1.ReadyCondition)
	g.Expect(c).NotTo(BeNil(), "no Ready condition")
	return *c
}

func newPackage(cluster, name, packageName, config string) *packagesv1.Package {
	return &packagesv1.Package{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.ClusterNamespace(cluster)},
		Spec:       packagesv1.PackageSpec{PackageName: packageName, Config: config},
	}
}

func workloadDeployment(ctx context.Context, name string) error {
	return workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.DefaultTargetNamespace, Name: name}, &appsv1.Deployment{})
}

func TestPackagesOfAWorkloadCluster(t *testing.T) {
	ctx := context.Background()
	active := defaultBundle(t)
	c := newCluster(t, "w1", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(c), workload.Config)

	t.Run("creating a cluster creates its packages namespace and its PackageBundleController", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Name: "flotilla-packages-w1"}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue(packagesv1.ClusterNameLabel, "w1"))
			g.Expect(pbcOf(g, "w1").Labels).To(HaveKeyWithValue(packagesv1.ClusterNamespaceLabel, c.Namespace))
			current := &flotillav1.Cluster{}
			g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
			g.Expect(current.Finalizers).To(ContainElement(packagesv1.ClusterCleanupFinalizer))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the PackageBundleController verifies the signed bundle and makes it active", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			pbc := pbcOf(g, "w1")
			g.Expect(pbc.Spec.ActiveBundle).To(Equal(active))
			g.Expect(pbc.Status.State).To(Equal(packagesv1.BundleControllerActive))
			g.Expect(pbc.Status.KubernetesMinor).To(Equal("1.36"))
			g.Expect(readyOf(g, pbc.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		b := &packagesv1.PackageBundle{}
		g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: active}, b)).To(Succeed())
		g.Expect(b.Status.State).To(Equal(packagesv1.BundleValid))
		g.Expect(b.Spec.Packages).To(HaveLen(2))
	})

	t.Run("a Package with a dependency installs the dependency first, then itself, into the workload cluster", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(mgmt.Client.Create(ctx, newPackage("w1", "stack", "stack", ""))).To(Succeed())
		g.Eventually(func(g Gomega) {
			hello := packageOf(g, "w1", "hello")
			g.Expect(hello.Labels).To(HaveKeyWithValue(packagesv1.DependencyOfLabel, "stack"))
			g.Expect(readyOf(g, hello.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(hello.Status.CurrentVersion).To(Equal("0.2.0"))
			stack := packageOf(g, "w1", "stack")
			g.Expect(readyOf(g, stack.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stack.Status.State).To(Equal(packagesv1.PackageInstalled))
			g.Expect(stack.Status.TargetVersion).To(Equal("0.1.0"))
		}, timeout, interval).Should(Succeed())
		g.Expect(workloadDeployment(ctx, "hello")).To(Succeed())
		g.Expect(workloadDeployment(ctx, "stack")).To(Succeed())
		// Helm's release record is in the workload cluster.
		secrets := &corev1.SecretList{}
		g.Expect(workload.Client.List(ctx, secrets, ctrlclient.InNamespace(packagesv1.DefaultTargetNamespace),
			ctrlclient.MatchingLabels{"owner": "helm", "name": "stack"})).To(Succeed())
		g.Expect(secrets.Items).To(HaveLen(1))
	})

	t.Run("changing the config upgrades the release, and a resync with nothing changed makes no revision", func(t *testing.T) {
		g := NewWithT(t)
		hello := packageOf(g, "w1", "hello")
		hello.Spec.Config = "greeting: bonjour\n"
		g.Expect(mgmt.Client.Update(ctx, hello)).To(Succeed())
		g.Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.DefaultTargetNamespace, Name: "hello-config"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "bonjour"))
			g.Expect(packageOf(g, "w1", "hello").Status.Revision).To(Equal(2))
		}, timeout, interval).Should(Succeed())

		unchanged := engine.Stats().Unchanged
		hello = packageOf(g, "w1", "hello")
		hello.Annotations = map[string]string{"test/resync": "1"}
		g.Expect(mgmt.Client.Update(ctx, hello)).To(Succeed())
		g.Eventually(func() int64 { return engine.Stats().Unchanged }, timeout, interval).Should(BeNumerically(">", unchanged))
		g.Expect(packageOf(g, "w1", "hello").Status.Revision).To(Equal(2))
	})

	t.Run("a pinned older version is installed and reports the newer one as an upgrade", func(t *testing.T) {
		g := NewWithT(t)
		old := newPackage("w1", "hello-old", "hello", "")
		old.Spec.PackageVersion = "0.1.0"
		old.Spec.TargetNamespace = "old"
		g.Expect(mgmt.Client.Create(ctx, old)).To(Succeed())
		g.Eventually(func(g Gomega) {
			p := packageOf(g, "w1", "hello-old")
			g.Expect(p.Status.CurrentVersion).To(Equal("0.1.0"))
			g.Expect(p.Status.UpgradesAvailable).To(Equal([]string{"0.2.0"}))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the webhook refuses bad input, naming the field", func(t *testing.T) {
		cases := []struct {
			name, packageName, version, config, want string
		}{
			{"a config that breaks the schema", "hello", "", "replicas: many\n", "spec.config.replicas"},
			{"a nested value below the minimum", "hello", "", "replicas: -1\n", "spec.config.replicas"},
			{"an unknown package", "nope", "", "", "spec.packageName"},
			{"a version the active bundle lacks", "hello", "9.9.9", "", "spec.packageVersion"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				g := NewWithT(t)
				p := newPackage("w1", "bad", tc.packageName, tc.config)
				p.Spec.PackageVersion = tc.version
				err := mgmt.Client.Create(ctx, p)
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.want))
			})
		}
	})

	t.Run("upgrade packages switches the cluster to a newer bundle and upgrades the Packages that pin no version", func(t *testing.T) {
		g := NewWithT(t)
		markManagement(t)
		hello3 := helloChart("hello", "0.3.0").push(t, "")
		stack := helloChart("stack", "0.1.0").push(t, "")
		stack.Dependencies = []string{"hello"}
		newer := pushBundle(t, bundleRepository, "1.36", 2, signingKey, pkg("hello", hello3), pkg("stack", stack))
		requestCheck(g, "w1", "upgrade")
		g.Eventually(func(g Gomega) {
			g.Expect(pbcOf(g, "w1").Status.State).To(Equal(packagesv1.BundleControllerUpgradeAvailable))
		}, timeout, interval).Should(Succeed())

		c := &client.Client{Out: io.Discard}
		_, err := c.UpgradePackages(ctx, kubeconfigFile(t, mgmt.Kubeconfig), "w1", newer)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			g.Expect(packageOf(g, "w1", "hello").Status.CurrentVersion).To(Equal("0.3.0"))
			// Pinned to 0.1.0, which the new bundle does not list: it waits, named in its condition.
			ready := readyOf(g, packageOf(g, "w1", "hello-old").Status.Conditions)
			g.Expect(ready.Reason).To(Equal(packagesv1.InvalidSpecReason))
			g.Expect(ready.Message).To(ContainSubstring("spec.packageVersion"))
			g.Expect(pbcOf(g, "w1").Status.State).To(Equal(packagesv1.BundleControllerActive))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("deleting a Package uninstalls its release", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(mgmt.Client.Delete(ctx, newPackage("w1", "hello-old", "", ""))).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "old", Name: "hello-old"}, &appsv1.Deployment{}))
		}, timeout, interval).Should(BeTrue())
	})

	t.Run("deleting the cluster uninstalls its Packages, then deletes its namespace and PackageBundleController", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(mgmt.Client.Delete(ctx, c)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(workloadDeployment(ctx, "hello"))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(workloadDeployment(ctx, "stack"))).To(BeTrue())
			err := mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: "w1"}, &packagesv1.PackageBundleController{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			err = mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			ns := &corev1.Namespace{}
			err = mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Name: "flotilla-packages-w1"}, ns)
			g.Expect(apierrors.IsNotFound(err) || !ns.DeletionTimestamp.IsZero()).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})
}

func TestAnUnreachableClusterIsReportedAndReleasedOnDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	defaultBundle(t)
	c := newCluster(t, "w-down", "1.36") // configs has no entry: the cluster cache cannot reach it

	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, "w-down").Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	g.Expect(mgmt.Client.Create(ctx, newPackage("w-down", "hello", "hello", ""))).To(Succeed())
	g.Eventually(func(g Gomega) {
		ready := readyOf(g, packageOf(g, "w-down", "hello").Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(packagesv1.ClusterUnreachableReason))
		g.Expect(ready.Message).To(ContainSubstring("connection to the workload cluster is down"))
	}, timeout, interval).Should(Succeed())

	// The cluster is being deleted and cannot be reached: its release goes with it.
	g.Expect(mgmt.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))
	}, timeout, interval).Should(BeTrue())
}

func TestAClusterMovedAwayKeepsItsPackages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster(t, "w-move", "1.36")
	g.Eventually(func(g Gomega) { pbcOf(g, "w-move") }, timeout, interval).Should(Succeed())
	g.Expect(mgmt.Client.Create(ctx, newPackage("w-move", "hello", "hello", ""))).To(Succeed())

	current := &flotillav1.Cluster{}
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
	current.Annotations = map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""}
	g.Expect(mgmt.Client.Update(ctx, current)).To(Succeed())
	g.Expect(mgmt.Client.Delete(ctx, current)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))
	}, timeout, interval).Should(BeTrue())
	// Nothing was uninstalled or deleted: the Package and the PBC are still there.
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "flotilla-packages-w-move", Name: "hello"}, &packagesv1.Package{})).To(Succeed())
	pbcOf(g, "w-move")
}

func TestBundleSignaturesDecideWhichBundlesAreUsed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repo = "signatures/bundles"
	hello := helloChart("hello", "0.1.0").push(t, "")
	otherKey, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	tampered := pushBundle(t, repo, "1.36", 50, otherKey, pkg("hello", hello))
	unsigned := pushBundle(t, repo, "1.36", 51, nil, pkg("hello", hello))

	// The PBC exists before its cluster, with its own source: the default source is never read.
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-sig", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	}
	g.Expect(mgmt.Client.Create(ctx, pbc)).To(Succeed())
	newCluster(t, "w-sig", "1.36")

	t.Run("bundles with a bad or no signature are invalid and never made active", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			for _, name := range []string{tampered, unsigned} {
				b := &packagesv1.PackageBundle{}
				g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, b)).To(Succeed())
				g.Expect(b.Status.State).To(Equal(packagesv1.BundleInvalid), name)
			}
			pbc := pbcOf(g, "w-sig")
			g.Expect(pbc.Spec.ActiveBundle).To(BeEmpty())
			g.Expect(readyOf(g, pbc.Status.Conditions).Reason).To(Equal(packagesv1.NoBundleReason))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a signed bundle found by an on-demand check becomes active", func(t *testing.T) {
		g := NewWithT(t)
		good := pushBundle(t, repo, "1.36", 52, signingKey, pkg("hello", hello))
		requestCheck(g, "w-sig", "1")
		g.Eventually(func(g Gomega) {
			pbc := pbcOf(g, "w-sig")
			g.Expect(pbc.Spec.ActiveBundle).To(Equal(good))
			g.Expect(pbc.Status.State).To(Equal(packagesv1.BundleControllerActive))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a newer signed bundle is reported as an upgrade, not applied", func(t *testing.T) {
		g := NewWithT(t)
		newer := pushBundle(t, repo, "1.36", 53, signingKey, pkg("hello", hello))
		requestCheck(g, "w-sig", "2")
		g.Eventually(func(g Gomega) {
			pbc := pbcOf(g, "w-sig")
			g.Expect(pbc.Status.State).To(Equal(packagesv1.BundleControllerUpgradeAvailable))
			g.Expect(pbc.Status.LatestBundle).To(Equal(newer))
			g.Expect(pbc.Spec.ActiveBundle).NotTo(Equal(newer))
		}, timeout, interval).Should(Succeed())
	})
}

func TestABundleEditedInTheAPIServerIsInvalidUntilTheRegistryRestoresIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repo = "edited/bundles"
	hello := helloChart("hello", "0.1.0").push(t, "")
	name := pushBundle(t, repo, "1.36", 70, signingKey, pkg("hello", hello))
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-edit", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	}
	g.Expect(mgmt.Client.Create(ctx, pbc)).To(Succeed())
	newCluster(t, "w-edit", "1.36")
	key := ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}
	stateOf := func(g Gomega) packagesv1.PackageBundleState {
		b := &packagesv1.PackageBundle{}
		g.Expect(mgmt.Client.Get(ctx, key, b)).To(Succeed())
		return b.Status.State
	}
	g.Eventually(stateOf, timeout, interval).Should(Equal(packagesv1.BundleValid))
	// The PBC has made it its active bundle before the edit: otherwise it only ever sees an
	// invalid bundle, and has none (NoBundle).
	g.Eventually(func(g Gomega) string { return pbcOf(g, "w-edit").Spec.ActiveBundle }, timeout, interval).Should(Equal(name))

	b := &packagesv1.PackageBundle{}
	g.Expect(mgmt.Client.Get(ctx, key, b)).To(Succeed())
	b.Spec.Packages[0].Versions[0].Digest = "sha256:" + strings.Repeat("0", 64)
	g.Expect(mgmt.Client.Update(ctx, b)).To(Succeed())
	g.Eventually(stateOf, timeout, interval).Should(Equal(packagesv1.BundleInvalid))
	g.Eventually(func(g Gomega) {
		g.Expect(readyOf(g, pbcOf(g, "w-edit").Status.Conditions).Reason).To(Equal(packagesv1.ActiveBundleInvalidReason))
	}, timeout, interval).Should(Succeed())

	// The next check reads the bundle from the registry again.
	requestCheck(g, "w-edit", "1")
	g.Eventually(stateOf, timeout, interval).Should(Equal(packagesv1.BundleValid))
}

func requestCheck(g Gomega, name, value string) {
	pbc := pbcOf(g, name)
	before := pbc.DeepCopy()
	pbc.Annotations = map[string]string{packagesv1.CheckUpgradesAnnotation: value}
	g.Expect(mgmt.Client.Patch(context.Background(), pbc, ctrlclient.MergeFrom(before))).To(Succeed())
}

func TestAnUnreachableRegistryDisconnectsThePackageBundleController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-offline", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: "127.0.0.1:1", Repository: "bundles"}},
	}
	g.Expect(mgmt.Client.Create(ctx, pbc)).To(Succeed())
	newCluster(t, "w-offline", "1.36")
	g.Eventually(func(g Gomega) {
		pbc := pbcOf(g, "w-offline")
		g.Expect(pbc.Status.State).To(Equal(packagesv1.BundleControllerDisconnected))
		reachable := meta.FindStatusCondition(pbc.Status.Conditions, packagesv1.SourceReachableCondition)
		g.Expect(reachable).NotTo(BeNil())
		g.Expect(reachable.Reason).To(Equal(packagesv1.RegistryUnreachableReason))
	}, timeout, interval).Should(Succeed())
}

func TestAManagementClusterInstallsItsPackagesIntoItself(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	defaultBundle(t)
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m-self", Namespace: mgmt.NewNamespace(t)},
		Spec: flotillav1.ClusterSpec{
			Management:        true,
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, "m-self").Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	p := newPackage("m-self", "hello", "hello", "")
	p.Spec.TargetNamespace = "self"
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	// No cluster cache entry: the manager's own config reaches the management cluster.
	g.Eventually(func() error {
		return mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "self", Name: "hello"}, &appsv1.Deployment{})
	}, timeout, interval).Should(Succeed())
	g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "self", Name: "hello"}, &appsv1.Deployment{})).NotTo(Succeed())
}

func TestANewPublicKeyVerifiesEveryBundleAgain(t *testing.T) {
	g := NewWithT(t)
	name := defaultBundle(t)
	newCluster(t, "w-key", "1.36") // its PBC records the default bundle
	g.Eventually(func(g Gomega) {
		g.Expect(bundleState(g, name)).To(Equal(packagesv1.BundleValid))
	}, timeout, interval).Should(Succeed())

	otherKey, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	setPublicKey(t, &otherKey.PublicKey)
	defer setPublicKey(t, &signingKey.PublicKey)
	g.Eventually(func(g Gomega) {
		g.Expect(bundleState(g, name)).To(Equal(packagesv1.BundleInvalid))
	}, timeout, interval).Should(Succeed())

	setPublicKey(t, &signingKey.PublicKey)
	g.Eventually(func(g Gomega) {
		g.Expect(bundleState(g, name)).To(Equal(packagesv1.BundleValid))
	}, timeout, interval).Should(Succeed())
}

func bundleState(g Gomega, name string) packagesv1.PackageBundleState {
	b := &packagesv1.PackageBundle{}
	g.Expect(mgmt.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, b)).To(Succeed())
	return b.Status.State
}

func setPublicKey(t *testing.T, pub *ecdsa.PublicKey) {
	t.Helper()
	data, err := bundle.EncodePublicKey(pub)
	must(t, err)
	cm := &corev1.ConfigMap{}
	must(t, mgmt.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: packagesv1.DefaultsConfigMapName}, cm))
	cm.Data[packagesv1.DefaultsPublicKeyKey] = string(data)
	must(t, mgmt.Client.Update(context.Background(), cm))
}
