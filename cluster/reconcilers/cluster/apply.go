package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// apply server-side applies obj, a desired object from a builder, as FieldOwner, taking over
// fields another manager set (the desired objects hold only fields Flotilla owns). On success obj
// holds the object as the API server returned it, status included. A failure records a Warning
// Event on the Flotilla Cluster c.
//
// An apply that would change nothing is skipped (unchanged): then obj holds the object as the
// manager's cache has it.
func (r *Reconciler) apply(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	u, err := applyConfiguration(obj)
	var body []byte
	if err == nil {
		body, err = json.Marshal(u.Object)
	}
	if err == nil && r.unchanged(ctx, obj, body) {
		return nil
	}
	if err == nil {
		err = r.Client.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership)
	}
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
	}
	if err != nil {
		if !apierrors.IsConflict(err) {
			r.Recorder.Eventf(c, obj, corev1.EventTypeWarning, eventApplyFailed, "Apply", "Applying %s %s: %v", kind, obj.GetName(), err)
		}
		return fmt.Errorf("applying %s %s: %w", kind, klog.KObj(obj), err)
	}
	r.remember(obj, body)
	return nil
}

// appliedObject is what the last apply of an object sent, and the fields the API server then
// recorded as FieldOwner's.
type appliedObject struct {
	body, fields [sha256.Size]byte
}

// unchanged reports whether applying body for obj would change nothing: this reconciler applied
// the same body last time, and the object in the manager's cache still has FieldOwner's fields
// as that apply left them (nobody took a field over, removed one or recreated the object). It
// then copies the cached object into obj. Only the kinds the reconciler watches are looked up
// (cachedKinds): a cache of others would watch them all.
func (r *Reconciler) unchanged(ctx context.Context, obj ctrlclient.Object, body []byte) bool {
	key := appliedKey(obj)
	last, ok := r.applied.Load(key)
	if !ok || last.(appliedObject).body != sha256.Sum256(body) || !cachedKinds[obj.GetObjectKind().GroupVersionKind().GroupKind()] {
		return false
	}
	live, ok := obj.DeepCopyObject().(ctrlclient.Object)
	if !ok || r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), live) != nil {
		return false
	}
	fields, found := ownFields(live)
	if !found || fields != last.(appliedObject).fields {
		return false
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(live).Elem()) // the same type: a copy of obj's
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return true
}

// remember records the apply of body that left obj as it is.
func (r *Reconciler) remember(obj ctrlclient.Object, body []byte) {
	if fields, found := ownFields(obj); found {
		r.applied.Store(appliedKey(obj), appliedObject{body: sha256.Sum256(body), fields: fields})
	}
}

// ownFields is the digest of the fields FieldOwner applied to obj, as its managedFields say.
func ownFields(obj ctrlclient.Object) ([sha256.Size]byte, bool) {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == FieldOwner && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" && f.FieldsV1 != nil {
			return sha256.Sum256(append([]byte(f.APIVersion+"\n"), f.FieldsV1.GetRawBytes()...)), true
		}
	}
	return [sha256.Size]byte{}, false
}

// appliedKey names obj in the record of applies.
func appliedKey(obj ctrlclient.Object) string {
	return obj.GetObjectKind().GroupVersionKind().String() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// cachedKinds are the kinds the reconciler watches (SetupWithManager), whose objects it reads
// from the manager's cache.
var cachedKinds = map[schema.GroupKind]bool{
	{Group: clusterv1.GroupVersion.Group, Kind: clusterv1.ClusterKind}:             true,
	{Group: clusterv1.GroupVersion.Group, Kind: "MachineDeployment"}:               true,
	{Group: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane"}:          true,
	{Group: kubeadmcontrolplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane"}: true,
	{Group: infrav1.GroupVersion.Group, Kind: "PacketCluster"}:                     true,
}

// applyConfiguration turns a typed object into the body of an apply request. It goes through
// JSON so the types' omitempty/omitzero tags decide what is left out, and drops what an apply
// must not carry: status (a subresource) and the zero creationTimestamp.
func applyConfiguration(obj ctrlclient.Object) (*unstructured.Unstructured, error) {
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, fmt.Errorf("%T %s has no apiVersion/kind set", obj, klog.KObj(obj))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
