package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// Reasons of a DriftedObject.
const (
	// Modified: the object exists but differs from the manifest.
	Modified = "Modified"
	// Deleted: the object is missing from the cluster.
	Deleted = "Deleted"
)

// Helm's marks on every object of a release (helm.sh/helm/v4 pkg/action's setMetadataVisitor,
// applied on install, upgrade and rollback), which it checks before adopting an object: the
// annotations say which release the object belongs to.
const (
	managedByLabel             = "app.kubernetes.io/managed-by"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Checker compares a release's objects with the live ones and restores those that drifted. It
// is safe for concurrent use.
type Checker struct {
	// FieldManager is Helm's server-side apply field manager, which restored fields are applied
	// as.
	FieldManager string

	mu      sync.Mutex
	clients map[string]ctrlclient.Client
}

// Check returns the objects of the release that drifted, in manifest order.
func (c *Checker) Check(ctx context.Context, cfg *rest.Config, objects []*unstructured.Unstructured, rules []addonsv1.DriftIgnoreRule) ([]addonsv1.DriftedObject, error) {
	cl, err := c.client(cfg)
	if err != nil {
		return nil, err
	}
	var drifted []addonsv1.DriftedObject
	for _, want := range objects {
		ignored, whole := IgnoredPaths(want, rules)
		if whole {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(want.GroupVersionKind())
		err := cl.Get(ctx, ctrlclient.ObjectKeyFromObject(want), live)
		switch {
		case apierrors.IsNotFound(err):
			drifted = append(drifted, driftedObject(want, Deleted, nil))
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s %s: %w", want.GetKind(), ctrlclient.ObjectKeyFromObject(want), err)
		}
		if diffs := Compare(want.Object, live.Object, ignored); len(diffs) > 0 {
			drifted = append(drifted, driftedObject(want, Modified, diffs))
		}
	}
	return drifted, nil
}

// Restore server-side applies obj, a manifest object of release releaseNamespace/releaseName,
// without the fields rules ignore, as Helm's field manager.
func (c *Checker) Restore(ctx context.Context, cfg *rest.Config, obj *unstructured.Unstructured, rules []addonsv1.DriftIgnoreRule, releaseName, releaseNamespace string) error {
	cl, err := c.client(cfg)
	if err != nil {
		return err
	}
	ignored, _ := IgnoredPaths(obj, rules)
	apply, err := withoutPaths(obj, ignored)
	if err != nil {
		return err
	}
	labels := apply.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = "Helm"
	apply.SetLabels(labels)
	annotations := apply.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ReleaseNameAnnotation] = releaseName
	annotations[ReleaseNamespaceAnnotation] = releaseNamespace
	apply.SetAnnotations(annotations)
	if err := cl.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(apply), ctrlclient.FieldOwner(c.FieldManager), ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("restoring %s %s: %w", obj.GetKind(), ctrlclient.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// client returns a client of the cluster cfg reaches, cached by its endpoint and credentials.
func (c *Checker) client(cfg *rest.Config) (ctrlclient.Client, error) {
	key := configKey(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	cl, err := ctrlclient.New(rest.CopyConfig(cfg), ctrlclient.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	if c.clients == nil {
		c.clients = map[string]ctrlclient.Client{}
	}
	c.clients[key] = cl
	return cl, nil
}

// configKey identifies a REST config by its endpoint and credentials, without keeping them.
func configKey(cfg *rest.Config) string {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(cfg.Host), cfg.CertData, cfg.KeyData, cfg.CAData, []byte(cfg.BearerToken), []byte(cfg.CertFile)} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func driftedObject(obj *unstructured.Unstructured, reason string, paths []string) addonsv1.DriftedObject {
	return addonsv1.DriftedObject{
		APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Reason: reason, Paths: paths,
	}
}
