package packagebundle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
)

// collect deletes b when the retention policy does not keep it (see Keep), and reports whether
// it did. Whether a PackageBundleController uses b is read from the API server, not the cache,
// right before the delete, which is conditional on b being unchanged.
func (r *Reconciler) collect(ctx context.Context, b *packagesv1.PackageBundle, history int) (bool, error) {
	bundles := &packagesv1.PackageBundleList{}
	if err := r.Client.List(ctx, bundles, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		return false, fmt.Errorf("listing PackageBundles: %w", err)
	}
	if Keep(b, bundles.Items, nil, history) {
		return false, nil
	}
	pbcs := &packagesv1.PackageBundleControllerList{}
	if err := r.APIReader.List(ctx, pbcs, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		return false, fmt.Errorf("listing PackageBundleControllers: %w", err)
	}
	if Keep(b, bundles.Items, pbcs.Items, history) {
		return false, nil
	}
	err := r.Client.Delete(ctx, b, ctrlclient.Preconditions{UID: &b.UID, ResourceVersion: &b.ResourceVersion})
	if err != nil {
		// Gone, or changed meanwhile (the change brings it back here).
		return false, ctrlclient.IgnoreNotFound(fmt.Errorf("deleting PackageBundle %s: %w", klog.KObj(b), err))
	}
	ctrl.LoggerFrom(ctx).Info("Deleted an old PackageBundle", "packageBundle", klog.KObj(b), "history", history)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "Collected", "Collect",
		"Deleted bundle %s: no PackageBundleController uses it and %d newer bundles of Kubernetes %s from its source are kept",
		b.Name, history, b.Spec.KubernetesMinor)
	return true, nil
}

// Keep is the retention policy of PackageBundles: a bundle is kept while it is the active bundle
// of a PackageBundleController (so one in use is never deleted), or one of the history newest
// bundles (by build) of its source and Kubernetes minor, valid or not. The others are deleted.
// PackageBundleController checks record only the bundles this keeps (see bundle.Newest), so a
// deleted bundle does not come back; making an older one active again fetches it again.
func Keep(b *packagesv1.PackageBundle, bundles []packagesv1.PackageBundle, pbcs []packagesv1.PackageBundleController, history int) bool {
	for i := range pbcs {
		if pbcs[i].Spec.ActiveBundle == b.Name {
			return true
		}
	}
	var group []string
	for i := range bundles {
		if sameSeries(&bundles[i], b) {
			group = append(group, bundles[i].Name)
		}
	}
	for _, name := range bundle.Newest(group, history) {
		if name == b.Name {
			return true
		}
	}
	return false
}

// sameSeries says whether two bundles are builds of one series: the same source and
// Kubernetes minor.
func sameSeries(a, b *packagesv1.PackageBundle) bool {
	if a.Spec.KubernetesMinor != b.Spec.KubernetesMinor || (a.Spec.Source == nil) != (b.Spec.Source == nil) {
		return false
	}
	return a.Spec.Source == nil || *a.Spec.Source == *b.Spec.Source
}
