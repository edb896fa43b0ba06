package packagebundlecontroller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// defaultRegistryTimeout bounds one check of a source.
const defaultRegistryTimeout = 30 * time.Second

// findCluster finds the Flotilla Cluster the PBC is named after: in the namespace its
// packages.flotilla.dev/cluster-namespace label names, else the only one of that name. When there
// is none, s.ignored says why.
func (r *Reconciler) findCluster(ctx context.Context, s *scope) error {
	pbc := s.pbc
	if pbc.Namespace != packagesv1.PackagesNamespace {
		s.ignored = fmt.Sprintf("PackageBundleControllers live in namespace %s, not %s", packagesv1.PackagesNamespace, pbc.Namespace)
		return nil
	}
	if ns := pbc.Labels[packagesv1.ClusterNamespaceLabel]; ns != "" {
		c := &flotillav1.Cluster{}
		err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: pbc.Name}, c)
		switch {
		case err == nil:
			s.cluster = c
		case apierrors.IsNotFound(err):
			s.ignored = fmt.Sprintf("no Flotilla Cluster %s/%s", ns, pbc.Name)
			return nil
		default:
			return fmt.Errorf("reading Cluster %s/%s: %w", ns, pbc.Name, err)
		}
	} else {
		list := &flotillav1.ClusterList{}
		if err := r.Client.List(ctx, list); err != nil {
			return fmt.Errorf("listing Clusters: %w", err)
		}
		var found []*flotillav1.Cluster
		for i := range list.Items {
			if list.Items[i].Name == pbc.Name {
				found = append(found, &list.Items[i])
			}
		}
		switch len(found) {
		case 0:
			s.ignored = fmt.Sprintf("no Flotilla Cluster is named %s", pbc.Name)
			return nil
		case 1:
			s.cluster = found[0]
		default:
			s.ignored = fmt.Sprintf("%d Flotilla Clusters are named %s: set label %s to the namespace of the right one",
				len(found), pbc.Name, packagesv1.ClusterNamespaceLabel)
			return nil
		}
	}
	// The minor the cluster runs, else the one it asks for. An unparsable one matches no bundle.
	s.minor, _ = kubeversion.Minor(cmp.Or(s.cluster.Status.KubernetesVersion, s.cluster.Spec.KubernetesVersion))
	return nil
}

// interval is spec.upgradeCheckInterval or its default.
func interval(pbc *packagesv1.PackageBundleController) time.Duration {
	if d := pbc.Spec.UpgradeCheckInterval.Duration; d > 0 {
		return d
	}
	d, _ := time.ParseDuration(packagesv1.DefaultUpgradeCheckInterval)
	return d
}

// mirrorRegistry is the registry of m, empty when m is nil.
func mirrorRegistry(m *registryconn.Mirror) string {
	if m == nil {
		return ""
	}
	return m.Registry
}

// checkDue says whether the source must be read now and, when not, how long until it must.
func (r *Reconciler) checkDue(s *scope) (bool, time.Duration) {
	pbc, st := s.pbc, s.statusBase
	every := interval(pbc)
	switch {
	case s.checked && s.checkErr == nil:
		return false, every
	case st.LastCheckTime == nil,
		pbc.Annotations[packagesv1.CheckUpgradesAnnotation] != st.ObservedCheckRequest,
		st.Source == nil || *st.Source != *s.source,
		st.RegistryMirror != mirrorRegistry(s.mirror),
		st.KubernetesMinor != s.minor,
		// A new spec.activeBundle the last check did not record (an older bundle, collected
		// since): the check fetches it again.
		st.ObservedGeneration != pbc.Generation && pbc.Spec.ActiveBundle != "" && !slices.Contains(st.Bundles, pbc.Spec.ActiveBundle):
		return true, 0
	}
	elapsed := r.now().Sub(st.LastCheckTime.Time)
	if elapsed >= every {
		return true, 0
	}
	return false, every - elapsed
}

// check lists the source's bundles for the cluster's minor and records each bundle the API
// server does not hold as valid yet (new, or invalid: it may have been signed again) as a
// PackageBundle. The packagebundle reconciler verifies their signatures.
func (r *Reconciler) check(ctx context.Context, s *scope, d defaults.Defaults) error {
	timeout := r.RegistryTimeout
	if timeout == 0 {
		timeout = defaultRegistryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src := Source{BundleSource: *s.source, PlainHTTP: d.PlainHTTP, Username: d.Username, Password: d.Password, CAData: d.CAData, Mirror: s.mirror}
	where := s.source.Registry + "/" + s.source.Repository
	if s.mirror != nil {
		where += " through the registry mirror " + s.mirror.Registry
	}
	names, err := r.Source.List(ctx, src, s.minor)
	if err != nil {
		return &RegistryError{Err: fmt.Errorf("listing bundles for Kubernetes %s in %s: %w", s.minor, where, err)}
	}
	for _, name := range retained(names, s.pbc.Spec.ActiveBundle, d.BundleHistory) {
		existing := &packagesv1.PackageBundle{}
		err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, existing)
		switch {
		case err == nil && existing.IsValid():
			continue
		case err == nil:
		case apierrors.IsNotFound(err):
			existing = nil
		default:
			return fmt.Errorf("reading PackageBundle %s: %w", name, err)
		}
		spec, err := r.Source.Pull(ctx, src, name)
		if err != nil {
			return &RegistryError{Err: fmt.Errorf("pulling bundle %s from %s: %w", name, where, err)}
		}
		spec.Source = s.source.DeepCopy()
		if err := r.record(ctx, s, name, existing, spec); err != nil {
			return err
		}
	}
	return nil
}

// retained are the bundles of names a check records: the keep newest, and the active bundle
// (which a user may have set to an older one). The packagebundle reconciler collects the others,
// so recording them would only make them come and go.
func retained(names []string, active string, keep int) []string {
	out := bundle.Newest(names, keep)
	if active != "" && slices.Contains(names, active) && !slices.Contains(out, active) {
		out = append(out, active)
	}
	return out
}

// RegistryError is a failure to read the registry: the PackageBundleController is disconnected.
type RegistryError struct{ Err error }

func (e *RegistryError) Error() string { return e.Err.Error() }
func (e *RegistryError) Unwrap() error { return e.Err }

// record creates PackageBundle name with spec, or updates an existing one whose spec differs.
func (r *Reconciler) record(ctx context.Context, s *scope, name string, existing *packagesv1.PackageBundle, spec packagesv1.PackageBundleSpec) error {
	if existing == nil {
		b := &packagesv1.PackageBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.PackagesNamespace}, Spec: spec}
		if err := r.Client.Create(ctx, b, ctrlclient.FieldOwner(FieldOwner)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // another PackageBundleController of the same source recorded it
			}
			return fmt.Errorf("creating PackageBundle %s: %w", name, err)
		}
		r.Recorder.Eventf(s.pbc, b, corev1.EventTypeNormal, "BundleFound", "Check", "Found bundle %s", name)
		return nil
	}
	if equality.Semantic.DeepEqual(existing.Spec, spec) {
		return nil
	}
	existing.Spec = spec
	if err := r.Client.Update(ctx, existing, ctrlclient.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsConflict(err) {
			return nil // changed meanwhile, by another PackageBundleController: the next check looks again
		}
		return fmt.Errorf("updating PackageBundle %s: %w", name, err)
	}
	r.Recorder.Eventf(s.pbc, existing, corev1.EventTypeNormal, "BundleChanged", "Check", "Bundle %s changed in the registry", name)
	return nil
}

// observeBundles reads the PackageBundles of the PBC's source and minor into s.
func (r *Reconciler) observeBundles(ctx context.Context, s *scope) error {
	list := &packagesv1.PackageBundleList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		return fmt.Errorf("listing PackageBundles: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		if b.Name == s.pbc.Spec.ActiveBundle {
			s.active = b
		}
		if b.Spec.KubernetesMinor != s.minor || b.Spec.Source == nil || *b.Spec.Source != *s.source {
			continue
		}
		if !b.IsValid() {
			s.invalid++
			continue
		}
		s.bundles = append(s.bundles, b)
	}
	sort.Slice(s.bundles, func(i, j int) bool { return s.bundles[i].Spec.Build < s.bundles[j].Spec.Build })
	return nil
}

// setActiveBundle sets spec.activeBundle to the newest valid bundle when it is empty.
func (r *Reconciler) setActiveBundle(ctx context.Context, s *scope) error {
	pbc := s.pbc
	if pbc.Spec.ActiveBundle != "" || len(s.bundles) == 0 {
		return nil
	}
	latest := s.bundles[len(s.bundles)-1]
	pbc.Spec.ActiveBundle = latest.Name
	if err := s.patch.Write(ctx, objectpatch.WithOptimisticLock()); err != nil {
		return fmt.Errorf("setting the active bundle: %w", err)
	}
	s.active = latest
	r.Recorder.Eventf(pbc, latest, corev1.EventTypeNormal, "ActiveBundleSet", "Activate", "Active bundle set to %s", latest.Name)
	return nil
}
