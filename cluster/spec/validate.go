package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// The rules of a Cluster and its provider configs are cluster/validation's, which the API
// server's webhooks run too; this file adds what only a file has: one Cluster, one namespace,
// references that resolve to documents of the file.

// assembler turns decoded documents into a Spec, recording problems as it goes.
type assembler struct {
	file string
	p    *problems
	docs []*document

	cluster    *document
	provider   *providers.Provider
	datacenter *document
	// machineConfigs are the documents of the provider's machine config kind, by name.
	machineConfigs map[string]*document
}

// assemble validates the documents as one cluster spec and applies defaults.
func assemble(file string, docs []*document, p *problems) *Spec {
	a := &assembler{file: file, p: p, docs: docs, machineConfigs: map[string]*document{}}
	if !a.findCluster() {
		return nil
	}
	a.checkMetadata()
	if len(a.p.list) > 0 {
		// References are resolved by name; with names missing or clashing they would only
		// add confusing follow-up problems.
		return nil
	}
	c := a.cluster.obj.(*flotillav1.Cluster)
	c.Status = flotillav1.ClusterStatus{}
	clustervalidation.DefaultCluster(c)
	if c.Spec.Topology != nil {
		return a.assembleTopology(c)
	}
	hint := a.findDatacenter()
	a.collectMachineConfigs()
	a.rejectClassDocuments() // topology.go
	a.report(a.cluster, clustervalidation.ValidateCluster(c), func(err *field.Error) string {
		switch {
		case strings.HasPrefix(err.Field, "spec.datacenterRef"):
			return hint
		case err.Type == field.ErrorTypeRequired && strings.HasSuffix(err.Field, "machineGroupRef"):
			return " in " + a.file
		}
		return ""
	})
	a.checkMachineRefs(c)

	s := &Spec{File: file, Cluster: c, MachineConfigs: map[string]ctrlclient.Object{}}
	s.KubernetesVersion, _ = binaries.ResolveMinor(c.Spec.KubernetesVersion) // reported above when it fails
	a.checkGitOps(c, s)
	if a.provider != nil {
		s.Provider = a.provider.Name
		a.checkConfigs()
	}
	if len(a.p.list) > 0 {
		return nil
	}

	s.Datacenter = a.datacenter.obj
	s.Objects = append(s.Objects, s.Datacenter)
	for _, d := range a.docs {
		if d.provider != nil && d.provider.MachineConfig.Kind == d.kind.gvk.Kind {
			s.MachineConfigs[d.obj.GetName()] = d.obj
			s.Objects = append(s.Objects, d.obj)
		}
	}
	s.Objects = append(s.Objects, c)
	a.setKinds(s.Objects)
	return s
}

// assembleTopology validates a ClusterClass cluster's file (topology.go), defaulted.
func (a *assembler) assembleTopology(c *flotillav1.Cluster) *Spec {
	docs := a.collectClass()
	s := &Spec{File: a.file, Cluster: c, Provider: ProviderClusterClass, MachineConfigs: map[string]ctrlclient.Object{}}
	s.KubernetesVersion, _ = binaries.ResolveMinor(c.Spec.KubernetesVersion) // reported below when it fails
	a.report(a.cluster, clustervalidation.ValidateCluster(c), nil)
	a.checkGitOps(c, s)
	a.validateTopology(c, docs)
	for _, d := range a.docs {
		if d.provider != nil {
			a.p.doc(d, "kind", "%s belongs to the %s provider, and a cluster of a ClusterClass takes its infrastructure from the class; remove it", d.kind.gvk.Kind, d.provider.Name)
		}
	}
	if len(a.p.list) > 0 {
		return nil
	}
	s.Objects = topologyObjects(c, docs)
	a.setKinds(s.Objects)
	return s
}

// setKinds sets the apiVersion and kind of each object from its document.
func (a *assembler) setKinds(objs []ctrlclient.Object) {
	for _, obj := range objs {
		obj.GetObjectKind().SetGroupVersionKind(a.documentOf(obj).kind.gvk)
	}
}

// report records the errors cluster/validation found in document d, each at its field's line;
// hint adds to an error's message what the file tells about it.
func (a *assembler) report(d *document, errs field.ErrorList, hint func(*field.Error) string) {
	for _, err := range errs {
		msg := message(err)
		if hint != nil {
			msg += hint(err)
		}
		a.p.doc(d, err.Field, "%s", msg)
	}
}

// message renders an error of cluster/validation as a problem's message: its detail, which
// says what is wrong and what to do, after "missing; " for a required field.
func message(err *field.Error) string {
	switch {
	case err.Detail == "":
		return err.ErrorBody()
	case err.Type == field.ErrorTypeRequired:
		return "missing; " + err.Detail
	default:
		return err.Detail
	}
}

// checkConfigs defaults the provider's configs in the file and checks each with its rules.
func (a *assembler) checkConfigs() {
	var configs []*document
	for _, d := range a.docs {
		if d.provider != nil && d.provider.Name == a.provider.Name {
			configs = append(configs, d)
		}
	}
	if a.datacenter != nil {
		defaultConfig(a.provider.DatacenterConfig, a.datacenter.obj)
		for _, d := range configs {
			if a.provider.MachineConfig.Kind == d.kind.gvk.Kind {
				defaultConfig(a.provider.MachineConfig, d.obj)
			}
		}
	}
	for _, d := range configs {
		if d.kind.validate != nil {
			a.report(d, d.kind.validate(d.obj), nil)
		}
	}
}

// defaultConfig sets the defaults of a config kind that has some on obj.
func defaultConfig(c providers.Config, obj ctrlclient.Object) {
	if c.Default != nil {
		c.Default(obj)
	}
}

func (a *assembler) documentOf(obj ctrlclient.Object) *document {
	for _, d := range a.docs {
		if d.obj == obj {
			return d
		}
	}
	return nil
}

// findCluster finds the one Cluster of the file.
func (a *assembler) findCluster() bool {
	var clusters []*document
	for _, d := range a.docs {
		if d.kind.gvk == clusterKind.gvk {
			clusters = append(clusters, d)
		}
	}
	switch {
	case len(a.docs) == 0:
		a.p.whole("holds no documents; `flotilla generate clusterconfig NAME --provider local` prints a spec to start from")
		return false
	case len(clusters) == 0:
		a.p.whole("has no Cluster; add a document with apiVersion: %s and kind: Cluster "+
			"(`flotilla generate clusterconfig NAME --provider local` prints one)", flotillav1.GroupVersion)
		return false
	}
	a.cluster = clusters[0]
	a.p.clusterDoc = clusters[0]
	for _, extra := range clusters[1:] {
		a.p.doc(extra, "", "a spec file describes one cluster, and %s is already one; put each cluster in its own file",
			a.cluster.label())
	}
	return true
}

// checkMetadata checks names and namespaces and defaults the namespace.
func (a *assembler) checkMetadata() {
	clusterNamespace := a.cluster.obj.GetNamespace()
	if clusterNamespace == "" {
		clusterNamespace = DefaultNamespace
	}
	seen := map[string]*document{}
	for _, d := range a.docs {
		obj := d.obj
		name := obj.GetName()
		switch {
		case name == "":
			a.p.doc(d, "metadata.name", "missing; every document needs a name")
		case d == a.cluster:
			// cluster/validation checks the Cluster's name.
		default:
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				a.p.doc(d, "metadata.name", "%q is not a valid name: use lowercase letters, digits, '-' and '.', "+
					"starting and ending with a letter or digit", name)
			}
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace(DefaultNamespace)
		}
		if ns := obj.GetNamespace(); ns != clusterNamespace {
			a.p.doc(d, "metadata.namespace", "%q differs from the Cluster's namespace %q; the Cluster finds its configs "+
				"in its own namespace, so use %q (or leave it out) in every document", ns, clusterNamespace, clusterNamespace)
		}
		if d == a.cluster {
			if msg := clustervalidation.DNSLabelProblem(clusterNamespace, validation.DNS1123LabelMaxLength); msg != "" {
				a.p.doc(d, "metadata.namespace", "%q is not a valid namespace: %s", clusterNamespace, msg)
			}
		}
		key := d.kind.gvk.Kind + "/" + name
		if first, dup := seen[key]; dup && name != "" {
			a.p.doc(d, "metadata.name", "%s %q is already defined by %s; rename one or remove it",
				d.kind.gvk.Kind, name, first.label())
		} else {
			seen[key] = d
		}
	}
}

// findDatacenter resolves spec.datacenterRef to a document of the file and settles the
// provider. It returns a hint for problems with spec.datacenterRef: the datacenter config the
// file has, when it has one.
func (a *assembler) findDatacenter() string {
	c := a.cluster.obj.(*flotillav1.Cluster)
	ref := c.Spec.DatacenterRef

	var datacenters []*document
	for _, d := range a.docs {
		if d.provider != nil && d.kind.gvk.Kind == d.provider.DatacenterConfig.Kind {
			datacenters = append(datacenters, d)
		}
	}
	hint := ""
	if len(datacenters) == 1 {
		hint = fmt.Sprintf("; the file has %s %q", datacenters[0].kind.gvk.Kind, datacenters[0].obj.GetName())
	}

	for _, d := range datacenters {
		if d.kind.gvk.Kind == ref.Kind && d.obj.GetName() == ref.Name {
			a.datacenter = d
			a.provider = d.provider
		}
	}
	if a.datacenter == nil && ref.Name != "" && slices.Contains(providers.DatacenterKinds(), ref.Kind) {
		a.p.cluster(field.NewPath("spec", "datacenterRef"), "%s %q not found in %s; add it or fix the name%s", ref.Kind, ref.Name, a.file, hint)
	}
	if a.provider == nil && len(datacenters) == 1 {
		// Keep checking machine configs against the provider the file is for.
		a.provider = datacenters[0].provider
	}
	for _, d := range datacenters {
		if d != a.datacenter && a.datacenter != nil {
			a.p.doc(d, "", "the Cluster uses %s through spec.datacenterRef, and a spec file holds one datacenter config; remove this one",
				a.datacenter.label())
		}
	}
	return hint
}

// collectMachineConfigs indexes the provider's machine configs and rejects other providers'.
func (a *assembler) collectMachineConfigs() {
	for _, d := range a.docs {
		if d.provider == nil || d.provider.MachineConfig.Kind != d.kind.gvk.Kind {
			continue
		}
		if a.provider != nil && d.provider.Name != a.provider.Name {
			a.p.doc(d, "kind", "%s belongs to the %s provider, but the Cluster's datacenter is of the %s provider; use %s",
				d.kind.gvk.Kind, d.provider.Name, a.provider.Name, a.provider.MachineConfig.Kind)
			continue
		}
		a.machineConfigs[d.obj.GetName()] = d
	}
}

// checkMachineRefs checks that every machineGroupRef that cluster/validation finds well formed
// names a machine config of the file.
func (a *assembler) checkMachineRefs(c *flotillav1.Cluster) {
	spec := field.NewPath("spec")
	if ref := c.Spec.ControlPlane.MachineGroupRef; ref != nil {
		a.checkMachineRef(c, spec.Child("controlPlane", "machineGroupRef"), *ref)
	}
	for i, group := range c.Spec.WorkerNodeGroups {
		a.checkMachineRef(c, spec.Child("workerNodeGroups").Index(i).Child("machineGroupRef"), group.MachineGroupRef)
	}
}

func (a *assembler) checkMachineRef(c *flotillav1.Cluster, path *field.Path, ref flotillav1.Ref) {
	p, known := providers.OfDatacenterKind(c.Spec.DatacenterRef.Kind)
	wellFormed := ref.Name != "" && slices.Contains(providers.MachineConfigKinds(), ref.Kind) && (!known || ref.Kind == p.MachineConfig.Kind)
	if !wellFormed {
		return // cluster/validation reports it
	}
	if d, ok := a.machineConfigs[ref.Name]; ok && d.kind.gvk.Kind == ref.Kind {
		return
	}
	msg := fmt.Sprintf("%s %q not found in %s; add it or fix the name", ref.Kind, ref.Name, a.file)
	if names := a.machineConfigNames(); len(names) > 0 {
		msg += fmt.Sprintf(" (the file has %s)", strings.Join(names, ", "))
	}
	a.p.cluster(path, "%s", msg)
}

func (a *assembler) machineConfigNames() []string {
	names := make([]string, 0, len(a.machineConfigs))
	for name := range a.machineConfigs {
		names = append(names, fmt.Sprintf("%q", name))
	}
	sort.Strings(names)
	return names
}

// sortProblems orders problems by line, whole-file problems first.
func sortProblems(list []Problem) {
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
}
