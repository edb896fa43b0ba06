package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// packagesRequestTimeout bounds each packages command's requests to the management cluster.
const packagesRequestTimeout = 30 * time.Second

// packagesCluster connects a packages command to the management cluster of kubeconfig, after
// the version check (which refuses a cluster no Flotilla manager runs on for mutating access),
// and checks that it serves the packages API: a workload cluster's kubeconfig fails here with a
// message that says so.
func (c *Client) packagesCluster(ctx context.Context, kubeconfig string, access Access) (ctrlclient.Client, error) {
	if kubeconfig == "" {
		return nil, errors.New("--kubeconfig of the management cluster is required, such as mgmt/mgmt.kubeconfig")
	}
	kc, err := KubeClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := c.CheckCompatibility(ctx, kc, kubeconfig, access); err != nil {
		return nil, err
	}
	err = kc.List(ctx, &packagesv1.PackageBundleControllerList{}, ctrlclient.InNamespace(packagesv1.PackagesNamespace), ctrlclient.Limit(1))
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s does not point to a Flotilla management cluster: it does not serve the %s API; pass the kubeconfig of the management cluster, such as mgmt/mgmt.kubeconfig",
			kubeconfig, packagesv1.GroupVersion)
	}
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reaching the management cluster of %s: %w", kubeconfig, err)
	}
	return kc, nil
}

// activeBundle returns the PBC of cluster and its active bundle.
func activeBundle(ctx context.Context, kc ctrlclient.Client, cluster string) (*packagesv1.PackageBundleController, *packagesv1.PackageBundle, error) {
	pbc := &packagesv1.PackageBundleController{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: cluster}, pbc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("cluster %s has no PackageBundleController: create it with `flotilla install packagecontroller --cluster %s`", cluster, cluster)
		}
		return nil, nil, fmt.Errorf("reading PackageBundleController %s: %w", cluster, err)
	}
	if pbc.Spec.ActiveBundle == "" {
		return pbc, nil, fmt.Errorf("cluster %s has no active bundle yet (%s: %s)", cluster, orNone(string(pbc.Status.State)), orNone(pbc.Status.Detail))
	}
	b := &packagesv1.PackageBundle{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: pbc.Spec.ActiveBundle}, b); err != nil {
		return pbc, nil, fmt.Errorf("reading the active bundle %s of cluster %s: %w", pbc.Spec.ActiveBundle, cluster, err)
	}
	return pbc, b, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ListPackages returns the bundle the packages of cluster come from: its active bundle, or,
// with kubeVersion ("1.36"), the newest valid bundle for that Kubernetes minor.
func (c *Client) ListPackages(ctx context.Context, kubeconfig, cluster, kubeVersion string) (*packagesv1.PackageBundle, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	if kubeVersion == "" {
		_, b, err := activeBundle(ctx, kc, cluster)
		return b, err
	}
	minor, err := kubeversion.Minor(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("--kube-version: %w", err)
	}
	bundles, err := c.getBundles(ctx, kc)
	if err != nil {
		return nil, err
	}
	var newest *packagesv1.PackageBundle
	for i := range bundles {
		b := &bundles[i]
		if b.Spec.KubernetesMinor == minor && b.IsValid() && (newest == nil || b.Spec.Build > newest.Spec.Build) {
			newest = b
		}
	}
	if newest == nil {
		return nil, fmt.Errorf("no valid bundle for Kubernetes %s: `flotilla get packagebundles` lists those found", minor)
	}
	return newest, nil
}

// GeneratePackage returns a Package manifest for package pkg of cluster's active bundle.
func (c *Client) GeneratePackage(ctx context.Context, kubeconfig, cluster, pkg, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	_, b, err := activeBundle(ctx, kc, cluster)
	if err != nil {
		return nil, err
	}
	return PackageManifest(b, cluster, pkg, name)
}

// InstallPackageOptions say which package to install into which cluster, and how.
type InstallPackageOptions struct {
	Cluster string
	// Package is the bundle's package; Name the Package's (and the release's) name, Package when
	// empty.
	Package, Name string
	// Version pins a version of the active bundle; the default version when empty.
	Version string
	// ValuesFiles are YAML files merged in order, then Set (Helm's --set syntax) on top.
	ValuesFiles []string
	Set         []string
	// TargetNamespace is where the release goes in the cluster.
	TargetNamespace string
}

// InstallPackage creates the Package: the webhook checks it against the active bundle.
func (c *Client) InstallPackage(ctx context.Context, kubeconfig string, o InstallPackageOptions) (*packagesv1.Package, error) {
	files := make([][]byte, 0, len(o.ValuesFiles))
	for _, f := range o.ValuesFiles {
		data, err := os.ReadFile(f) //nolint:gosec // reading the file the user names is the point
		if err != nil {
			return nil, fmt.Errorf("reading values file: %w", err)
		}
		files = append(files, data)
	}
	config, err := MergeValues(files, o.Set)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, Mutating)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = o.Package
	}
	p := &packagesv1.Package{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.ClusterNamespace(o.Cluster)},
		Spec: packagesv1.PackageSpec{
			PackageName: o.Package, PackageVersion: o.Version, Config: config, TargetNamespace: o.TargetNamespace,
		},
	}
	if err := kc.Create(ctx, p); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("package %s is already installed on cluster %s: change it with kubectl edit package -n %s %s, or delete it first",
				name, o.Cluster, p.Namespace, name)
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cluster %s has no packages namespace %s: is the cluster managed by this management cluster?", o.Cluster, p.Namespace)
		}
		return nil, fmt.Errorf("installing package %s on cluster %s: %w", o.Package, o.Cluster, err)
	}
	return p, nil
}

// GetPackages lists the Packages of cluster, by name.
func (c *Client) GetPackages(ctx context.Context, kubeconfig, cluster string) ([]packagesv1.Package, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	list := &packagesv1.PackageList{}
	if err := kc.List(ctx, list, ctrlclient.InNamespace(packagesv1.ClusterNamespace(cluster))); err != nil {
		return nil, fmt.Errorf("listing the packages of cluster %s: %w", cluster, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// DeletePackage deletes Package name of cluster; its finalizer uninstalls the release. With
// wait, it returns once the Package is gone.
func (c *Client) DeletePackage(ctx context.Context, kubeconfig, cluster, name string, wait time.Duration) error {
	kc, err := c.packagesCluster(ctx, kubeconfig, Mutating)
	if err != nil {
		return err
	}
	p := &packagesv1.Package{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.ClusterNamespace(cluster)}}
	if err := kc.Delete(ctx, p); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %s has no package %s: `flotilla get packages --cluster %s` lists them", cluster, name, cluster)
		}
		return fmt.Errorf("deleting package %s of cluster %s: %w", name, cluster, err)
	}
	if wait <= 0 {
		return nil
	}
	return poll(ctx, 500*time.Millisecond, wait, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(kc.Get(ctx, ctrlclient.ObjectKeyFromObject(p), p)), nil
	}, func() error {
		return fmt.Errorf("package %s of cluster %s is still being uninstalled after %s (%s): see `flotilla get packages --cluster %s`",
			name, cluster, wait, p.Status.Detail, cluster)
	})
}

// UpgradePackages makes bundle the active bundle of cluster: the Packages that do not pin a
// version are upgraded to the bundle's default versions.
func (c *Client) UpgradePackages(ctx context.Context, kubeconfig, cluster, bundleName string) (*packagesv1.PackageBundleController, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, Mutating)
	if err != nil {
		return nil, err
	}
	pbc := &packagesv1.PackageBundleController{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: cluster}, pbc); err != nil {
		return nil, fmt.Errorf("reading PackageBundleController %s: %w", cluster, err)
	}
	b := &packagesv1.PackageBundle{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: bundleName}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no bundle %s: `flotilla get packagebundles` lists the bundles found (%s)", bundleName, orNone(pbc.Status.Detail))
		}
		return nil, fmt.Errorf("reading PackageBundle %s: %w", bundleName, err)
	}
	if !b.IsValid() {
		return nil, fmt.Errorf("bundle %s is not valid (%s): it cannot be used", bundleName, b.WhyNotValid())
	}
	if minor := pbc.Status.KubernetesMinor; minor != "" && b.Spec.KubernetesMinor != minor {
		return nil, fmt.Errorf("bundle %s is for Kubernetes %s, cluster %s runs %s", bundleName, b.Spec.KubernetesMinor, cluster, minor)
	}
	before := pbc.DeepCopy()
	pbc.Spec.ActiveBundle = bundleName
	if err := kc.Patch(ctx, pbc, ctrlclient.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("setting the active bundle of cluster %s: %w", cluster, err)
	}
	return pbc, nil
}

// GetPackageBundles lists the PackageBundles, by Kubernetes minor and build.
func (c *Client) GetPackageBundles(ctx context.Context, kubeconfig string) ([]packagesv1.PackageBundle, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	return c.getBundles(ctx, kc)
}

func (c *Client) getBundles(ctx context.Context, kc ctrlclient.Client) ([]packagesv1.PackageBundle, error) {
	list := &packagesv1.PackageBundleList{}
	if err := kc.List(ctx, list, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		return nil, fmt.Errorf("listing PackageBundles: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i].Spec, list.Items[j].Spec
		if a.KubernetesMinor != b.KubernetesMinor {
			return a.KubernetesMinor < b.KubernetesMinor
		}
		return a.Build < b.Build
	})
	return list.Items, nil
}

// GetPackageBundleControllers lists the PackageBundleControllers, by name.
func (c *Client) GetPackageBundleControllers(ctx context.Context, kubeconfig string) ([]packagesv1.PackageBundleController, error) {
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	list := &packagesv1.PackageBundleControllerList{}
	if err := kc.List(ctx, list, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		return nil, fmt.Errorf("listing PackageBundleControllers: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// PackageControllerOptions configure `flotilla install packagecontroller`.
type PackageControllerOptions struct {
	// Cluster is the Flotilla Cluster the PBC is for.
	Cluster string
	// Registry and Repository are the default bundle source written to package-defaults; left
	// as they are when empty.
	Registry, Repository string
	// PublicKey is the PEM public key bundles are verified with; left as it is when empty.
	PublicKey []byte
	// PlainHTTP, when set, says whether registries are reached over plain HTTP. When it is not,
	// a registry on this machine (netaddr.IsLoopback) without CAData is reached over plain HTTP,
	// as Flotilla's embedded registry speaks it, and InstallPackageController says so.
	PlainHTTP *bool
	// Source, when set, is the PBC's own source (spec.source).
	Source *packagesv1.BundleSource
	// Username, Password and CAData, when any is set, are written to the Secret
	// flotilla-packages/package-registry-credentials, which package-defaults then names: they
	// are used for every registry of bundles and charts.
	Username, Password string
	CAData             []byte
}

// CredentialsSecretName is the Secret `install packagecontroller` keeps registry credentials in.
const CredentialsSecretName = "package-registry-credentials"

// InstallPackageController writes the package-defaults ConfigMap from o (merging into the
// existing one) and creates the PackageBundleController of o.Cluster when it does not exist. It
// refuses a cluster that is not a Flotilla management cluster, and a cluster name it does not
// manage.
func (c *Client) InstallPackageController(ctx context.Context, kubeconfig string, o PackageControllerOptions) (*packagesv1.PackageBundleController, error) {
	registry := o.Registry
	if o.Source != nil {
		registry = o.Source.Registry
	}
	if o.PlainHTTP == nil && plainHTTPByDefault(registry, len(o.CAData) > 0) {
		plain := true
		o.PlainHTTP = &plain
		_, _ = fmt.Fprintf(c.Out, "Registry %s is on this machine: reaching it over plain HTTP (--plain-http=false for TLS)\n", registry)
	}
	ctx, cancel := context.WithTimeout(ctx, packagesRequestTimeout)
	defer cancel()
	kc, err := c.packagesCluster(ctx, kubeconfig, Mutating)
	if err != nil {
		return nil, err
	}
	if len(o.PublicKey) > 0 {
		if _, err := defaults.ParsePublicKey(o.PublicKey); err != nil {
			return nil, fmt.Errorf("--public-key: %w", err)
		}
	}
	clusters := &flotillav1.ClusterList{}
	if err := kc.List(ctx, clusters); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	var cluster *flotillav1.Cluster
	for i := range clusters.Items {
		if clusters.Items[i].Name == o.Cluster {
			cluster = &clusters.Items[i]
		}
	}
	if cluster == nil {
		return nil, fmt.Errorf("the management cluster of %s manages no cluster named %s: `flotilla get clusters --kubeconfig %s` lists them", kubeconfig, o.Cluster, kubeconfig)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packagesv1.PackagesNamespace}}
	if err := kc.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	if o.Username != "" || o.Password != "" || len(o.CAData) > 0 {
		if err := writeCredentials(ctx, kc, o); err != nil {
			return nil, err
		}
	}
	if err := writeDefaults(ctx, kc, o); err != nil {
		return nil, err
	}
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: o.Cluster, Namespace: packagesv1.PackagesNamespace, Labels: map[string]string{
			packagesv1.ClusterNameLabel: cluster.Name, packagesv1.ClusterNamespaceLabel: cluster.Namespace,
		}},
		Spec: packagesv1.PackageBundleControllerSpec{Source: o.Source},
	}
	err = kc.Create(ctx, pbc)
	switch {
	case apierrors.IsAlreadyExists(err):
		if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(pbc), pbc); err != nil {
			return nil, fmt.Errorf("reading PackageBundleController %s: %w", o.Cluster, err)
		}
		if o.Source != nil {
			before := pbc.DeepCopy()
			pbc.Spec.Source = o.Source
			if err := kc.Patch(ctx, pbc, ctrlclient.MergeFrom(before)); err != nil {
				return nil, fmt.Errorf("setting the source of PackageBundleController %s: %w", o.Cluster, err)
			}
		}
	case err != nil:
		return nil, fmt.Errorf("creating PackageBundleController %s: %w", o.Cluster, err)
	}
	return pbc, nil
}

// writeDefaults creates or updates package-defaults with what o sets.
func writeDefaults(ctx context.Context, kc ctrlclient.Client, o PackageControllerOptions) error {
	cm := &corev1.ConfigMap{}
	err := kc.Get(ctx, defaults.Key, cm)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ConfigMap %s: %w", defaults.Key, err)
	}
	before := cm.DeepCopy()
	cm.Namespace, cm.Name = defaults.Key.Namespace, defaults.Key.Name
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	set := func(k, v string) {
		if v != "" {
			cm.Data[k] = v
		}
	}
	set(packagesv1.DefaultsRegistryKey, o.Registry)
	set(packagesv1.DefaultsRepositoryKey, o.Repository)
	set(packagesv1.DefaultsPublicKeyKey, string(o.PublicKey))
	if o.PlainHTTP != nil {
		cm.Data[packagesv1.DefaultsPlainHTTPKey] = fmt.Sprint(*o.PlainHTTP)
	}
	if o.Username != "" || o.Password != "" || len(o.CAData) > 0 {
		cm.Data[packagesv1.DefaultsCredentialsSecretKey] = CredentialsSecretName
	}
	if !exists {
		if err := kc.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", defaults.Key, err)
		}
		return nil
	}
	if err := kc.Patch(ctx, cm, ctrlclient.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", defaults.Key, err)
	}
	return nil
}

// WaitPackageReady waits until Package name of cluster is Ready for its latest spec, at most
// timeout. It stops early when the Package's input is invalid (it would never become Ready).
func (c *Client) WaitPackageReady(ctx context.Context, kubeconfig, cluster, name string, timeout time.Duration) (*packagesv1.Package, error) {
	kc, err := c.packagesCluster(ctx, kubeconfig, ReadOnly)
	if err != nil {
		return nil, err
	}
	key := ctrlclient.ObjectKey{Namespace: packagesv1.ClusterNamespace(cluster), Name: name}
	p := &packagesv1.Package{}
	var ready *metav1.Condition
	err = poll(ctx, readyPollInterval, timeout, func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, key, p); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return false, fmt.Errorf("reading package %s of cluster %s: %w", name, cluster, err)
		}
		ready = meta.FindStatusCondition(p.Status.Conditions, packagesv1.ReadyCondition)
		switch {
		case ready == nil || ready.ObservedGeneration != p.Generation:
			return false, nil
		case ready.Status == metav1.ConditionTrue:
			return true, nil
		case ready.Reason == packagesv1.InvalidSpecReason:
			return false, fmt.Errorf("package %s of cluster %s is invalid: %s", name, cluster, ready.Message)
		}
		return false, nil
	}, func() error {
		detail := "no status yet"
		if ready != nil {
			detail = ready.Reason + ": " + ready.Message
		}
		return fmt.Errorf("package %s of cluster %s is not Ready after %s (%s)", name, cluster, timeout, detail)
	})
	return p, err
}

// writeCredentials creates or replaces the registry credentials Secret.
func writeCredentials(ctx context.Context, kc ctrlclient.Client, o PackageControllerOptions) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CredentialsSecretName, Namespace: packagesv1.PackagesNamespace}}
	data := map[string][]byte{}
	if o.Username != "" {
		data[packagesv1.CredentialsUsernameKey] = []byte(o.Username)
	}
	if o.Password != "" {
		data[packagesv1.CredentialsPasswordKey] = []byte(o.Password)
	}
	if len(o.CAData) > 0 {
		data[packagesv1.CredentialsCAKey] = o.CAData
	}
	err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(s), s)
	switch {
	case apierrors.IsNotFound(err):
		s.Data = data
		if err := kc.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	s.Data = data
	if err := kc.Update(ctx, s); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
