package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ConfigMap recording the version of the manager that last started against a cluster.
const (
	// VersionConfigMapName is the name of the ConfigMap, in Namespace.
	VersionConfigMapName = "flotilla-version"
	// VersionKey is the data key holding the version.
	VersionKey = "version"
	// PublicVersionNamespace holds a copy of the ConfigMap that every authenticated user may
	// read (Role flotilla-version-reader, config/rbac/cluster-creator), so that the CLI of a user
	// who may see nothing in flotilla-system can check its compatibility too.
	PublicVersionNamespace = "kube-public"
)

// ensureNamespace creates flotilla-system, and kube-public (which the API server creates
// itself, shortly after it starts), unless they exist.
func ensureNamespace(ctx context.Context, c client.Client) error {
	for _, name := range []string{Namespace, PublicVersionNamespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// recordVersion writes version into the ConfigMap flotilla-system/flotilla-version and its
// public copy kube-public/flotilla-version.
func recordVersion(ctx context.Context, c client.Client, version string) error {
	for _, ns := range []string{Namespace, PublicVersionNamespace} {
		cm := corev1ac.ConfigMap(VersionConfigMapName, ns).WithData(map[string]string{VersionKey: version})
		if err := c.Apply(ctx, cm, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("recording manager version in ConfigMap %s/%s: %w", ns, VersionConfigMapName, err)
		}
	}
	return nil
}

// RecordedVersion returns the version of the manager that last started against the cluster c
// talks to, or "" when none has.
func RecordedVersion(ctx context.Context, c client.Reader) (string, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: VersionConfigMapName}, cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", Namespace, VersionConfigMapName, err)
	}
	return cm.Data[VersionKey], nil
}
