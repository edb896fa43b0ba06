package objectpatch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon a reconcile that lost an optimistic-lock race usually tries again:
// its copy of the object was outdated, and the cache has the newer one by then.
const ConflictRetry = time.Second

// Patch follows one object through a reconcile. New remembers the object as read; each write
// sends what the reconcile changed since the object was read or last written, and remembers the
// object as written.
type Patch struct {
	client ctrlclient.Client
	// obj is the object the reconcile changes.
	obj ctrlclient.Object
	// base is obj as the API server holds it, as far as the reconcile knows: as read, or as
	// last written.
	base ctrlclient.Object
}

// New starts following obj, as just read with c. Every later change to obj goes to the API
// server through the Patch's methods, which keep obj's resourceVersion and generation those of
// the last write.
func New(c ctrlclient.Client, obj ctrlclient.Object) *Patch {
	return &Patch{client: c, obj: obj, base: obj.DeepCopyObject().(ctrlclient.Object)}
}

// Option changes how Write writes.
type Option func(*options)

type options struct {
	optimisticLock bool
	// statusOwner, when set, is the field manager that applies owned(obj)'s status
	// (WithStatusApply).
	statusOwner string
	owned       func(ctrlclient.Object) (ctrlclient.Object, error)
}

// WithOptimisticLock makes each patch of the write fail with a Conflict when the object changed on
// the API server since it was read or last written: for a status that records a decision a
// reconcile working from an outdated copy must not make again.
func WithOptimisticLock() Option {
	return func(o *options) { o.optimisticLock = true }
}

// WithStatusApply makes Write write the status by server-side apply, as fieldManager, instead of
// by merge patch: for an object whose status has more than one writer, each owning some of its
// fields and conditions (see the package documentation). owned returns the part of obj's status
// the writer owns, as an object of obj's type of which only the status is read: the status fields
// the writer writes and, among the conditions, only those of the types it owns. The API server
// keeps the other writers' fields and conditions, whatever copy of obj the writer read; a field or
// condition the writer applied before and leaves out now is removed.
func WithStatusApply[T ctrlclient.Object](fieldManager string, owned func(T) T) Option {
	return func(o *options) {
		o.statusOwner = fieldManager
		o.owned = func(obj ctrlclient.Object) (ctrlclient.Object, error) {
			typed, ok := obj.(T)
			if !ok {
				return nil, fmt.Errorf("WithStatusApply for %T given a %T", *new(T), obj)
			}
			return owned(typed), nil
		}
	}
}

// Write patches what obj changed since it was read or last written: its metadata and spec with
// one merge patch, then its whole status with one merge patch of the status subresource (or one
// server-side apply of the status the writer owns, WithStatusApply). Each write is sent only when
// something in it changed. A patch that changes the finalizers carries an optimistic lock
// whatever the options (see the package documentation). A status write that finds the object
// gone is not an error. After a write, obj carries the resourceVersion and the generation the
// API server gave it.
func (p *Patch) Write(ctx context.Context, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.base)
	if err != nil {
		return fmt.Errorf("converting %s: %w", p.describe(), err)
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", p.describe(), err)
	}
	statusBefore, statusAfter := before["status"], after["status"]
	delete(before, "status")
	delete(after, "status")

	if !equality.Semantic.DeepEqual(before, after) {
		lock := o.optimisticLock || !slices.Equal(p.base.GetFinalizers(), p.obj.GetFinalizers())
		written, err := p.patch(ctx, objectEndpoint, p.obj, lock)
		if err != nil {
			return fmt.Errorf("patching %s: %w", p.describe(), err)
		}
		// The API server now holds obj's metadata and spec, and still the status as read.
		if p.base, err = withStatus(p.obj, statusBefore); err != nil {
			return fmt.Errorf("converting %s: %w", p.describe(), err)
		}
		p.wrote(written)
	}
	if !equality.Semantic.DeepEqual(statusBefore, statusAfter) {
		written, err := p.writeStatus(ctx, o)
		if apierrors.IsNotFound(err) {
			return nil // gone, and its status with it
		}
		if err != nil {
			return fmt.Errorf("writing the status of %s: %w", p.describe(), err)
		}
		p.base = p.obj.DeepCopyObject().(ctrlclient.Object)
		p.wrote(written)
	}
	return nil
}

// EnsureFinalizer adds finalizer to the object and writes it at once, alone, with an optimistic
// lock: other changes made to obj are left for Write. It adds nothing to an object being deleted,
// and reports whether it added the finalizer.
func (p *Patch) EnsureFinalizer(ctx context.Context, finalizer string) (added bool, err error) {
	if !p.obj.GetDeletionTimestamp().IsZero() || controllerutil.ContainsFinalizer(p.obj, finalizer) {
		return false, nil
	}
	add := func(o ctrlclient.Object) { controllerutil.AddFinalizer(o, finalizer) }
	if err := p.writeFinalizers(ctx, add); err != nil {
		return false, fmt.Errorf("adding finalizer %s to %s: %w", finalizer, p.describe(), err)
	}
	return true, nil
}

// RemoveFinalizer removes finalizer from the object and writes it at once, alone, with an
// optimistic lock: other changes made to obj are left for Write. An object already gone is not an
// error.
func (p *Patch) RemoveFinalizer(ctx context.Context, finalizer string) error {
	if !controllerutil.ContainsFinalizer(p.obj, finalizer) {
		return nil
	}
	remove := func(o ctrlclient.Object) { controllerutil.RemoveFinalizer(o, finalizer) }
	err := p.writeFinalizers(ctx, remove)
	if apierrors.IsNotFound(err) {
		remove(p.obj) // gone: no finalizer holds it
		remove(p.base)
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer %s from %s: %w", finalizer, p.describe(), err)
	}
	return nil
}

// writeFinalizers makes change to the finalizers of the object as last written and patches
// that alone, with an optimistic lock; once written, it makes the change to obj too.
func (p *Patch) writeFinalizers(ctx context.Context, change func(ctrlclient.Object)) error {
	changed := p.base.DeepCopyObject().(ctrlclient.Object)
	change(changed)
	written, err := p.patch(ctx, objectEndpoint, changed, true)
	if err != nil {
		return err
	}
	change(p.obj)
	change(p.base)
	p.wrote(written)
	return nil
}

// endpoint is where a patch goes: the object, or its status subresource.
type endpoint int

const (
	objectEndpoint endpoint = iota
	statusEndpoint
)

// patch sends the merge patch from the object as last written to want, and returns the
// object as the API server wrote it. want itself is not modified.
func (p *Patch) patch(ctx context.Context, to endpoint, want ctrlclient.Object, lock bool) (ctrlclient.Object, error) {
	mergePatch := ctrlclient.MergeFrom(p.base)
	if lock {
		mergePatch = ctrlclient.MergeFromWithOptions(p.base, ctrlclient.MergeFromWithOptimisticLock{})
	}
	written := want.DeepCopyObject().(ctrlclient.Object)
	var err error
	if to == statusEndpoint {
		err = p.client.Status().Patch(ctx, written, mergePatch)
	} else {
		err = p.client.Patch(ctx, written, mergePatch)
	}
	return written, err
}

// writeStatus writes the status of obj: the whole of it by merge patch, or the writer's part of
// it by server-side apply (WithStatusApply). It returns the object as the API server wrote it.
func (p *Patch) writeStatus(ctx context.Context, o options) (ctrlclient.Object, error) {
	if o.statusOwner == "" {
		return p.patch(ctx, statusEndpoint, p.obj, o.optimisticLock)
	}
	return p.applyStatus(ctx, o)
}

// applyStatus server-side applies the status of obj the writer owns (WithStatusApply), with the
// object's resourceVersion as last written when o asks for an optimistic lock, and returns the
// object as the API server wrote it.
func (p *Patch) applyStatus(ctx context.Context, o options) (ctrlclient.Object, error) {
	owned, err := o.owned(p.obj)
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(p.obj, p.client.Scheme())
	if err != nil {
		return nil, err
	}
	// Through JSON, so that the types' omitempty and omitzero tags leave out what the writer
	// does not set.
	raw, err := json.Marshal(owned)
	if err != nil {
		return nil, fmt.Errorf("encoding the status: %w", err)
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, fmt.Errorf("decoding the status: %w", err)
	}
	applied := &unstructured.Unstructured{Object: map[string]any{}}
	if status, ok := content["status"]; ok {
		applied.Object["status"] = status
	}
	applied.SetGroupVersionKind(gvk)
	applied.SetNamespace(p.obj.GetNamespace())
	applied.SetName(p.obj.GetName())
	if o.optimisticLock {
		applied.SetResourceVersion(p.base.GetResourceVersion())
	}
	err = p.client.Status().Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(applied),
		ctrlclient.FieldOwner(o.statusOwner), ctrlclient.ForceOwnership)
	return applied, err
}

// wrote records in obj, and in the base of the next write, what the API server changed on its
// own when it wrote: the resourceVersion, and the generation after a change of the spec.
func (p *Patch) wrote(written ctrlclient.Object) {
	for _, o := range []ctrlclient.Object{p.obj, p.base} {
		o.SetResourceVersion(written.GetResourceVersion())
		o.SetGeneration(written.GetGeneration())
	}
}

// describe names the object in errors: its kind and namespace/name.
func (p *Patch) describe() string {
	kind := fmt.Sprintf("%T", p.obj)
	if gvk, err := apiutil.GVKForObject(p.obj, p.client.Scheme()); err == nil {
		kind = gvk.Kind
	}
	return kind + " " + klog.KObj(p.obj).String()
}

// withStatus returns a copy of obj with the given status (as unstructured content; nil for
// none).
func withStatus(obj ctrlclient.Object, status any) (ctrlclient.Object, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(content, "status")
	if status != nil {
		content["status"] = status
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrlclient.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RequeueOnConflict turns an optimistic-lock conflict into a quiet requeue after retry: the
// reconcile worked from an outdated copy of its object, which is no failure. Any other error is
// returned as it is.
func RequeueOnConflict(err error, retry time.Duration) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	return reconcile.Result{}, err
}
