package config

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// FieldOwner is the server-side apply field manager of everything this package applies.
const FieldOwner = "flotilla"

//go:embed crd/bases/*.yaml crd/capi/*.yaml
var crdFS embed.FS

// CRDs returns every CustomResourceDefinition a Flotilla management cluster needs: Flotilla's own
// (crd/bases), Cluster API's and clusterctl's inventory (crd/capi), sorted by name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := readYAMLDocuments(crdFS, "crd/bases", "crd/capi")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(docs))
	seen := map[string]string{}
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc.body, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", doc.file, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("decoding %s: kind is %q, want CustomResourceDefinition", doc.file, crd.Kind)
		}
		if other, ok := seen[crd.Name]; ok {
			return nil, fmt.Errorf("CRD %s is defined twice, in %s and %s", crd.Name, other, doc.file)
		}
		seen[crd.Name] = doc.file
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}

// Install applies every CRD that CRDs returns and waits until each is Established. It is
// idempotent: it also upgrades CRDs installed by an older Flotilla.
func Install(ctx context.Context, c ctrlclient.Client) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	return InstallCRDs(ctx, c, crds)
}

// defaultEstablishTimeout bounds the wait for CRDs to be Established when ctx has no deadline.
const defaultEstablishTimeout = 2 * time.Minute

// InstallCRDs applies crds with server-side apply (field manager FieldOwner, forcing ownership)
// and waits until the API server reports each of them Established. Without a deadline on ctx it
// waits at most two minutes.
func InstallCRDs(ctx context.Context, c ctrlclient.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		u, err := applyObject(crd)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
		}
	}

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultEstablishTimeout)
		defer cancel()
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return waitServed(ctx, c, crds)
}

// waitServed lists every CRD's resource once, all at the same time. An Established CRD is not
// usable yet: the API server answers the first list of a resource with "retry after 1s" until
// that resource's watch cache has started. Clients that list many kinds one after another
// (clusterctl move does) would wait a second for each; here they all start together.
func waitServed(ctx context.Context, c ctrlclient.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		version := storageVersion(crd)
		if version == "" {
			continue
		}
		wg.Go(func() {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
			if err := c.List(ctx, list, ctrlclient.Limit(1)); err != nil {
				errs[i] = fmt.Errorf("listing %s: %w", crd.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// storageVersion is the version a CRD stores, "" when it has none.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// applyObject turns a CRD into the unstructured object to apply: apiVersion and kind set, no
// status and no empty creationTimestamp, which are not the caller's to declare.
func applyObject(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, fmt.Errorf("converting CRD %s: %w", crd.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
	u.SetKind("CustomResourceDefinition")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return u, nil
}

func waitEstablished(ctx context.Context, c ctrlclient.Client, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, crd); err != nil {
			if runtime.IsNotRegisteredError(err) {
				return false, err // the client cannot read CRDs at all: waiting will not help
			}
			last = err.Error()
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		last = "not Established yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be Established (%s): %w", name, last, err)
	}
	return nil
}

// yamlDocument is one document of a multi-document YAML file.
type yamlDocument struct {
	file string
	body []byte
}

// readYAMLDocuments returns the non-empty documents of the *.yaml files directly in dirs, in
// file name order.
func readYAMLDocuments(fsys fs.FS, dirs ...string) ([]yamlDocument, error) {
	var docs []yamlDocument
	for _, dir := range dirs {
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			file := path.Join(dir, e.Name())
			data, err := fs.ReadFile(fsys, file)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", file, err)
			}
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", file, err)
				}
				if len(bytes.TrimSpace(stripComments(doc))) == 0 {
					continue
				}
				docs = append(docs, yamlDocument{file: file, body: doc})
			}
		}
	}
	return docs, nil
}

// stripComments drops whole-line comments and document separators, to tell an empty document
// from a real one.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte("#")) || bytes.Equal(t, []byte("---")) {
			continue
		}
		out = append(out, line...)
		out = append(out, '\n')
	}
	return out
}
