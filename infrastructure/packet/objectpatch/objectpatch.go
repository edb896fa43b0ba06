package objectpatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Write patches what differs between before (the object as read) and after (the object as the
// reconcile left it): metadata and spec first, then the status in one write. after is not
// modified. A status write that finds the object gone (its finalizer was just removed) is not
// an error.
func Write(ctx context.Context, c client.Client, before, after client.Object) error {
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	if err != nil {
		return fmt.Errorf("converting %T: %w", before, err)
	}
	a, err := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if err != nil {
		return fmt.Errorf("converting %T: %w", after, err)
	}
	statusBefore, statusAfter := b["status"], a["status"]
	delete(b, "status")
	delete(a, "status")

	if !equality.Semantic.DeepEqual(b, a) {
		if err := c.Patch(ctx, after.DeepCopyObject().(client.Object), client.MergeFrom(before)); err != nil {
			return fmt.Errorf("patching %T %s: %w", after, client.ObjectKeyFromObject(after), err)
		}
	}
	if !equality.Semantic.DeepEqual(statusBefore, statusAfter) {
		err := c.Status().Patch(ctx, after.DeepCopyObject().(client.Object), client.MergeFrom(before))
		gone := apierrors.IsNotFound(err) && !after.GetDeletionTimestamp().IsZero()
		if err != nil && !gone {
			return fmt.Errorf("patching the status of %T %s: %w", after, client.ObjectKeyFromObject(after), err)
		}
	}
	return nil
}
