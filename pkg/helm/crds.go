package helm

import (
	"context"
	"fmt"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// crdEstablishTimeout bounds the wait for new CRDs to be served.
const crdEstablishTimeout = 60 * time.Second

// ensureCRDs creates the CRDs of the chart's (and its subcharts') crds/ directories that the
// cluster does not have, and waits until they are served. Existing CRDs are left alone, as Helm
// does. Helm's own CRD step does not wait unless the whole release waits, after which the
// release's custom resources fail to map; doing it here makes charts with CRDs install in one go.
func ensureCRDs(ctx context.Context, clients *clusterClients, ch *chart.Chart) error {
	crds, err := chartCRDs(ch)
	if err != nil || len(crds) == 0 {
		return err
	}
	dyn, err := dynamic.NewForConfig(clients.config)
	if err != nil {
		return fmt.Errorf("creating a client for CRDs: %w", err)
	}
	var created []*unstructured.Unstructured
	for _, crd := range crds {
		_, err := crdClient(dyn, crd).Create(ctx, crd, metav1.CreateOptions{FieldManager: "helm"})
		switch {
		case apierrors.IsAlreadyExists(err):
			continue
		case err != nil:
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
		created = append(created, crd)
	}
	for _, crd := range created {
		if err := waitEstablished(ctx, crdClient(dyn, crd), crd.GetName()); err != nil {
			return err
		}
	}
	if len(created) > 0 {
		clients.invalidate()
	}
	return nil
}

// chartCRDs parses the CRDs of ch and its subcharts.
func chartCRDs(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var crds []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		if crd.File == nil {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			var content map[string]any
			if err := yaml.Unmarshal([]byte(doc), &content); err != nil {
				return nil, fmt.Errorf("reading CRD file %s: %w", crd.Filename, err)
			}
			if len(content) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: content}
			if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil || u.GetKind() != "CustomResourceDefinition" {
				return nil, fmt.Errorf("CRD file %s holds a %s %s, not a CustomResourceDefinition", crd.Filename, u.GetAPIVersion(), u.GetKind())
			}
			crds = append(crds, u)
		}
	}
	return crds, nil
}

func crdClient(dyn dynamic.Interface, crd *unstructured.Unstructured) dynamic.ResourceInterface {
	gv, _ := schema.ParseGroupVersion(crd.GetAPIVersion()) // checked by chartCRDs
	return dyn.Resource(gv.WithResource("customresourcedefinitions"))
}

// waitEstablished waits until the CRD's Established condition is true.
func waitEstablished(ctx context.Context, client dynamic.ResourceInterface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not there yet: poll again
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return nil
}
