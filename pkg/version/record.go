package version

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// The record of the manager's version in the cluster it manages, the contract between the
// manager, which writes it each time it starts (Record), and the CLI, which reads it before it
// acts on a management cluster and applies its compatibility rule (cli/client CheckVersions).
const (
	// ConfigMapName is the name of the ConfigMap holding the record, in
	// flotillav1.SystemNamespace and in PublicNamespace.
	ConfigMapName = "flotilla-version"
	// ConfigMapKey is the data key holding the version.
	ConfigMapKey = "version"
	// PublicNamespace holds a copy of the ConfigMap that every authenticated user may read
	// (Role flotilla-version-reader, config/rbac/cluster-creator), so that the CLI of a user
	// who may see nothing in flotilla-system can check its compatibility too.
	PublicNamespace = "kube-public"
	// Unknown is what a manager started without a version records.
	Unknown = "unknown"
)

// Record writes v into the ConfigMap flotilla-system/flotilla-version and its public copy
// kube-public/flotilla-version, server-side applied as fieldOwner. Both namespaces must exist.
func Record(ctx context.Context, c ctrlclient.Client, fieldOwner, v string) error {
	for _, ns := range []string{flotillav1.SystemNamespace, PublicNamespace} {
		cm := corev1ac.ConfigMap(ConfigMapName, ns).WithData(map[string]string{ConfigMapKey: v})
		if err := c.Apply(ctx, cm, ctrlclient.FieldOwner(fieldOwner), ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("recording manager version in ConfigMap %s/%s: %w", ns, ConfigMapName, err)
		}
	}
	return nil
}

// Recorded returns the version of the manager that last started against the cluster c talks
// to, as flotilla-system keeps it, or "" when none has.
func Recorded(ctx context.Context, c ctrlclient.Reader) (string, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: flotillav1.SystemNamespace, Name: ConfigMapName}, cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", flotillav1.SystemNamespace, ConfigMapName, err)
	}
	return cm.Data[ConfigMapKey], nil
}
