package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the server-side apply field manager of everything the CLI applies.
const fieldOwner = ctrlclient.FieldOwner("flotilla-cli")

// applyObjects server-side applies objs in order, so re-running a command converges instead of
// failing on objects that already exist.
func applyObjects(ctx context.Context, c ctrlclient.Client, objs []ctrlclient.Object) error {
	for _, obj := range objs {
		u, err := toUnstructured(c, obj)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), fieldOwner, ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// toUnstructured converts a typed object, setting its apiVersion and kind from the scheme.
func toUnstructured(c ctrlclient.Client, obj ctrlclient.Object) (*unstructured.Unstructured, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, fmt.Errorf("finding the kind of %T: %w", obj, err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// ApplyFileOptions say what ApplyFile applies, where, and how long it waits.
type ApplyFileOptions struct {
	// File holds one or more YAML (or JSON) documents, each a Kubernetes object.
	File string
	// Kubeconfig is the cluster's kubeconfig.
	Kubeconfig string
	// Wait, when set, is how long to wait for every applied object that reports conditions to
	// have Ready=True for its current generation.
	Wait time.Duration
}

// ApplyFile server-side applies every object of a file, the way `kubectl apply --server-side`
// does; namespaced objects without a namespace go to "default". All of them are first applied in
// a dry run, so an object the API server refuses leaves every other one unapplied. It returns the
// applied objects as the API server stored them.
func (c *Client) ApplyFile(ctx context.Context, o ApplyFileOptions) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(o.File)
	if err != nil {
		return nil, err
	}
	kc, err := KubeClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		namespaced, err := kc.IsObjectNamespaced(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w (is its API installed in this cluster?)", o.File, u.GetKind(), u.GetName(), err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace(metav1.NamespaceDefault)
		}
	}
	for _, dryRun := range []bool{true, false} {
		for _, u := range objs {
			opts := []ctrlclient.ApplyOption{fieldOwner, ctrlclient.ForceOwnership}
			if dryRun {
				opts = append(opts, ctrlclient.DryRunAll)
			}
			// Apply writes the API server's answer into the object it is given: a copy, so the
			// next pass sends what the file says.
			if err := kc.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
				return nil, fmt.Errorf("%s: applying %s %s: %w", o.File, u.GetKind(), objectName(u), err)
			}
		}
	}
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	for _, u := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(u), got); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", u.GetKind(), objectName(u), err)
		}
		applied = append(applied, got)
	}
	if o.Wait <= 0 {
		return applied, nil
	}
	for i, u := range applied {
		if err := c.waitReady(ctx, kc, u, o.Wait); err != nil {
			return nil, err
		}
		if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(u), applied[i]); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", u.GetKind(), objectName(u), err)
		}
	}
	return applied, nil
}

// waitReady waits until u has the condition Ready=True for its current generation. An object
// whose status carries no conditions (a ConfigMap) is not waited for.
func (c *Client) waitReady(ctx context.Context, kc ctrlclient.Client, u *unstructured.Unstructured, timeout time.Duration) error {
	if _, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); !found && !reportsConditions(u) {
		return nil
	}
	var last string
	err := poll(ctx, readyPollInterval, timeout, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(u), got); err != nil {
			return false, nil //nolint:nilerr // keep asking until the timeout
		}
		ready, message := readyCondition(got)
		if message != last && message != "" {
			fmt.Fprintf(c.Out, "  %s %s: %s\n", u.GetKind(), objectName(u), message)
			last = message
		}
		return ready, nil
	}, func() error {
		return fmt.Errorf("%s %s is not Ready after %s (last: %s)", u.GetKind(), objectName(u), timeout, last)
	})
	if err == nil {
		fmt.Fprintf(c.Out, "  %s %s is Ready\n", u.GetKind(), objectName(u))
	}
	return err
}

// reportsConditions: the objects Flotilla's controllers report on (every kind of a
// *.flotilla.dev group) get their conditions soon after they are applied.
func reportsConditions(u *unstructured.Unstructured) bool {
	return strings.HasSuffix(u.GroupVersionKind().Group, ".flotilla.dev")
}

// readyCondition reports whether u's Ready condition is True for its current generation, and
// the condition's reason and message.
func readyCondition(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	observed, hasObserved, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	for _, item := range conds {
		cond, ok := item.(map[string]any)
		if !ok || cond["type"] != "Ready" {
			continue
		}
		message := fmt.Sprintf("Ready=%v", cond["status"])
		if reason, _ := cond["reason"].(string); reason != "" {
			message += " (" + reason
			if m, _ := cond["message"].(string); m != "" {
				message += ": " + m
			}
			message += ")"
		}
		current := !hasObserved || observed >= u.GetGeneration()
		return cond["status"] == "True" && current, message
	}
	return false, "waiting for a Ready condition"
}

// readObjects decodes every non-empty document of a YAML or JSON file.
func readObjects(file string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", file, i)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s holds no object", file)
	}
	return objs, nil
}

// objectName is namespace/name, or name for a cluster-scoped object.
func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
