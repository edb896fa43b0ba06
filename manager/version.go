package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/version"
)

// ensureNamespace creates flotilla-system, and kube-public (which the API server creates
// itself, shortly after it starts), unless they exist: the manager's version is recorded in
// both (version.Record).
func ensureNamespace(ctx context.Context, c ctrlclient.Client) error {
	for _, name := range []string{Namespace, version.PublicNamespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
