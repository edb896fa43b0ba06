package spec

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// ProviderClusterClass is the provider of a Cluster of a Cluster API ClusterClass
// (spec.topology): any Cluster API provider, through its class.
const ProviderClusterClass = "clusterclass"

// ProviderInMemory is Cluster API's in-memory provider, through a ClusterClass: `flotilla
// generate clusterconfig --provider inmemory` prints a spec of that provider.
const ProviderInMemory = "inmemory"

// A spec file of a ClusterClass cluster may hold the ClusterClass its spec.topology.class names,
// with the templates the class references: what an admin provides. Creating the cluster then
// applies them first (a user without the rights to, a flotilla-cluster-creator, leaves them out
// and names a class an admin has put in the namespace). The templates are of any Cluster API
// provider (any kind ending in Template of a *.cluster.x-k8s.io group): the file is checked for
// their names and references, and the management cluster's API server checks their fields.

// clusterClassKind is the ClusterClass of a ClusterClass cluster. It belongs to no provider.
var clusterClassKind = kind{
	gvk:       clusterv1.GroupVersion.WithKind("ClusterClass"),
	newObject: func() ctrlclient.Object { return &clusterv1.ClusterClass{} },
}

// isTemplateKind reports whether a document's apiVersion and kind are those of a template of a
// Cluster API provider: a kind ending in Template of a group ending in .cluster.x-k8s.io, other
// than Cluster API core's.
func isTemplateKind(apiVersion, kindName string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group != clusterv1.GroupVersion.Group && strings.HasSuffix(gv.Group, ".cluster.x-k8s.io") &&
		strings.HasSuffix(kindName, "Template") && len(kindName) > len("Template")
}

// decodeTemplate decodes a provider's template document, whose schema only the management
// cluster's API server knows.
func decodeTemplate(d *document, data []byte, apiVersion, kindName string, p *problems) bool {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		p.doc(d, "", "%v", err)
		return false
	}
	if _, ok := u.Object["metadata"].(map[string]any); !ok && u.Object["metadata"] != nil {
		p.doc(d, "metadata", "expected a mapping with name and namespace")
		return false
	}
	gv, _ := schema.ParseGroupVersion(apiVersion)
	d.kind = kind{gvk: gv.WithKind(kindName)}
	d.obj = u
	return true
}

// classDocuments are the ClusterClass and template documents of a file.
type classDocuments struct {
	class     *document
	templates []*document
}

// collectClass finds the file's ClusterClass and templates.
func (a *assembler) collectClass() classDocuments {
	var out classDocuments
	for _, d := range a.docs {
		switch {
		case d.kind.gvk == clusterClassKind.gvk && out.class != nil:
			a.p.doc(d, "", "a spec file holds at most one ClusterClass, and %s is already one; remove this one", out.class.label())
		case d.kind.gvk == clusterClassKind.gvk:
			out.class = d
		case isTemplateKind(d.kind.gvk.GroupVersion().String(), d.kind.gvk.Kind):
			out.templates = append(out.templates, d)
		}
	}
	return out
}

// rejectClassDocuments: a cluster of a Flotilla provider has no use for a ClusterClass or
// templates.
func (a *assembler) rejectClassDocuments() {
	docs := a.collectClass()
	if docs.class != nil {
		docs.templates = append(docs.templates, docs.class)
	}
	for _, d := range docs.templates {
		a.p.doc(d, "kind", "%s belongs to a cluster of a ClusterClass, and this Cluster names no spec.topology; remove it, or set spec.topology.class", d.kind.gvk.Kind)
	}
}

// validateTopology checks a ClusterClass cluster beyond cluster/validation's rules: when the
// file holds the ClusterClass, that it is the one the Cluster names, that every group's class is
// one of its worker classes, and that the file holds every template it references and no other.
func (a *assembler) validateTopology(c *flotillav1.Cluster, docs classDocuments) {
	if docs.class == nil {
		for _, d := range docs.templates {
			a.p.doc(d, "", "the file holds no ClusterClass that references this template; add the ClusterClass %q, or remove the template", c.Spec.Topology.Class)
		}
		return
	}
	cc := docs.class.obj.(*clusterv1.ClusterClass)
	if cc.Name != c.Spec.Topology.Class {
		a.p.cluster(field.NewPath("spec", "topology", "class"), "%q is not the ClusterClass of %s, %q; use %q or rename the class", c.Spec.Topology.Class, a.file, cc.Name, cc.Name)
	}
	workerClasses := map[string]bool{}
	for _, md := range cc.Spec.Workers.MachineDeployments {
		workerClasses[md.Class] = true
	}
	for i, g := range c.Spec.WorkerNodeGroups {
		if g.Class != "" && !workerClasses[g.Class] {
			a.p.cluster(field.NewPath("spec", "workerNodeGroups").Index(i).Child("class"), "%q is not a worker class of ClusterClass %q; use one of %s",
				g.Class, cc.Name, quotedKeys(workerClasses))
		}
	}
	inFile := map[string]*document{}
	for _, d := range docs.templates {
		inFile[templateKey(d.kind.gvk.GroupVersion().String(), d.kind.gvk.Kind, d.obj.GetName())] = d
	}
	referenced := map[string]bool{}
	for _, ref := range classTemplateRefs(cc) {
		key := templateKey(ref.ref.APIVersion, ref.ref.Kind, ref.ref.Name)
		referenced[key] = true
		if inFile[key] == nil {
			a.p.doc(docs.class, ref.path, "%s %q (%s) not found in %s; add it or fix the reference", ref.ref.Kind, ref.ref.Name, ref.ref.APIVersion, a.file)
		}
	}
	for key, d := range inFile {
		if !referenced[key] {
			a.p.doc(d, "", "ClusterClass %q does not reference this template; remove it or reference it", cc.Name)
		}
	}
}

// classTemplateRef is one template reference of a ClusterClass and the path of its field.
type classTemplateRef struct {
	ref  clusterv1.ClusterClassTemplateReference
	path string
}

// classTemplateRefs lists the template references of a ClusterClass.
func classTemplateRefs(cc *clusterv1.ClusterClass) []classTemplateRef {
	refs := []classTemplateRef{
		{cc.Spec.Infrastructure.TemplateRef, "spec.infrastructure.templateRef"},
		{cc.Spec.ControlPlane.TemplateRef, "spec.controlPlane.templateRef"},
	}
	if cc.Spec.ControlPlane.MachineInfrastructure.TemplateRef.IsDefined() {
		refs = append(refs, classTemplateRef{cc.Spec.ControlPlane.MachineInfrastructure.TemplateRef, "spec.controlPlane.machineInfrastructure.templateRef"})
	}
	for i, md := range cc.Spec.Workers.MachineDeployments {
		path := fmt.Sprintf("spec.workers.machineDeployments[%d]", i)
		refs = append(refs,
			classTemplateRef{md.Bootstrap.TemplateRef, path + ".bootstrap.templateRef"},
			classTemplateRef{md.Infrastructure.TemplateRef, path + ".infrastructure.templateRef"})
	}
	return refs
}

func templateKey(apiVersion, kindName, name string) string {
	return apiVersion + "/" + kindName + "/" + name
}

func quotedKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// topologyObjects are the objects of a ClusterClass cluster's file in the order to apply them:
// the templates, the ClusterClass, which references them, then the Cluster, which names it.
func topologyObjects(c *flotillav1.Cluster, docs classDocuments) []ctrlclient.Object {
	var objs []ctrlclient.Object
	for _, d := range docs.templates {
		objs = append(objs, d.obj)
	}
	if docs.class != nil {
		objs = append(objs, docs.class.obj)
	}
	return append(objs, c)
}
