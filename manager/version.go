package manager

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/version"
)

// RBAC of the version record (ManagerIdentity): the manager checks that the namespaces it
// records its version in exist, and applies the ConfigMap flotilla-version in each
// (version.Record).
//
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=flotilla-system;kube-public,verbs=get
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=configmaps,resourceNames=flotilla-version,verbs=get;patch
// +kubebuilder:rbac:groups="",namespace=kube-public,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=kube-public,resources=configmaps,resourceNames=flotilla-version,verbs=get;patch

// errNamespaceMissing says that a namespace the manager needs does not exist (yet).
var errNamespaceMissing = errors.New("namespace missing")

// namespacesExist checks that flotilla-system, which Flotilla's installation creates with the
// roles of the manager's identities, and kube-public, which the API server creates shortly after
// it starts, exist: the manager's version is recorded in both (version.Record). The manager
// creates neither.
func namespacesExist(ctx context.Context, c ctrlclient.Reader) error {
	for _, name := range []string{Namespace, version.PublicNamespace} {
		err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: %s does not exist; Flotilla's components are installed with it (flotilla create cluster does): %w", errNamespaceMissing, name, err)
		}
		if err != nil {
			return fmt.Errorf("reading namespace %s: %w", name, err)
		}
	}
	return nil
}
