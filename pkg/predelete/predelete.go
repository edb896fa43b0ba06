package predelete

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// Annotation is the hook annotation of component.
func Annotation(component string) string {
	return flotillav1.PreDeleteHookAnnotationPrefix + component
}

// Hooks are the components whose hooks are set on c, sorted.
func Hooks(c *flotillav1.Cluster) []string {
	var hooks []string
	for k := range c.Annotations {
		if name, ok := strings.CutPrefix(k, flotillav1.PreDeleteHookAnnotationPrefix); ok {
			hooks = append(hooks, name)
		}
	}
	slices.Sort(hooks)
	return hooks
}

// Ensure sets component's hook on c, unless it is set or c is being deleted (a hook set then
// would come too late to be honoured, and nothing is installed into a cluster being deleted).
func Ensure(ctx context.Context, client ctrlclient.Client, c *flotillav1.Cluster, component string) error {
	if !c.DeletionTimestamp.IsZero() || metav1.HasAnnotation(c.ObjectMeta, Annotation(component)) {
		return nil
	}
	p := objectpatch.New(client, c)
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, Annotation(component), "")
	if err := p.Write(ctx); err != nil {
		return fmt.Errorf("setting the pre-delete hook of %s on Cluster %s: %w", component, klog.KObj(c), err)
	}
	return nil
}

// Release removes component's hook from c: the component is done with the cluster.
func Release(ctx context.Context, client ctrlclient.Client, c *flotillav1.Cluster, component string) error {
	if !metav1.HasAnnotation(c.ObjectMeta, Annotation(component)) {
		return nil
	}
	p := objectpatch.New(client, c)
	delete(c.Annotations, Annotation(component))
	if err := p.Write(ctx); ctrlclient.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the pre-delete hook of %s from Cluster %s: %w", component, klog.KObj(c), err)
	}
	return nil
}
