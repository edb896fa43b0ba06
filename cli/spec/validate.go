package spec

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// maxWorkerGroupNameLength is the CRD's limit on spec.workerNodeGroups[].name.
const maxWorkerGroupNameLength = 40

// minorVersion is the form of spec.kubernetesVersion the CRD accepts.
var minorVersion = regexp.MustCompile(`^1\.[0-9]+$`)

// assembler turns decoded documents into a Spec, recording problems as it goes.
type assembler struct {
	file string
	p    *problems
	docs []*document

	cluster    *document
	provider   *provider
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
	if c.Spec.Topology != nil {
		return a.assembleTopology(c)
	}
	a.findDatacenter()
	a.collectMachineConfigs()
	a.rejectClassDocuments() // topology.go

	s := &Spec{File: file, Cluster: c, MachineConfigs: map[string]client.Object{}}
	a.defaultCluster(c)
	a.validateCluster(c, s)
	a.checkGitOps(c, s)
	if a.provider != nil {
		s.Provider = a.provider.name
		if a.datacenter != nil {
			var machineConfigs []client.Object
			for _, d := range a.docs {
				if a.provider.isMachineConfigKind(d.kind.gvk.Kind) {
					machineConfigs = append(machineConfigs, d.obj)
				}
			}
			a.provider.defaultObjects(a.datacenter.obj, machineConfigs)
		}
		a.provider.validate(s, a.p)
	}
	if len(a.p.list) > 0 {
		return nil
	}

	s.Datacenter = a.datacenter.obj
	s.Objects = append(s.Objects, s.Datacenter)
	for _, d := range a.docs {
		if d.provider != nil && d.provider.isMachineConfigKind(d.kind.gvk.Kind) {
			s.MachineConfigs[d.obj.GetName()] = d.obj
			s.Objects = append(s.Objects, d.obj)
		}
	}
	s.Objects = append(s.Objects, c)
	a.setKinds(s.Objects)
	return s
}

// assembleTopology validates a ClusterClass cluster's file (topology.go) and applies defaults.
func (a *assembler) assembleTopology(c *flotillav1.Cluster) *Spec {
	docs := a.collectClass()
	s := &Spec{File: a.file, Cluster: c, Provider: ProviderClusterClass, MachineConfigs: map[string]client.Object{}}
	a.defaultCluster(c)
	a.validateCluster(c, s)
	a.checkGitOps(c, s)
	a.validateTopology(c, docs)
	for _, d := range a.docs {
		if d.provider != nil {
			a.p.doc(d, "kind", "%s belongs to the %s provider, and a cluster of a ClusterClass takes its infrastructure from the class; remove it", d.kind.gvk.Kind, d.provider.name)
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
func (a *assembler) setKinds(objs []client.Object) {
	for _, obj := range objs {
		obj.GetObjectKind().SetGroupVersionKind(a.documentOf(obj).kind.gvk)
	}
}

func (a *assembler) documentOf(obj client.Object) *document {
	for _, d := range a.docs {
		if d.obj == obj {
			return d
		}
	}
	return nil
}

// topology reports whether the file's Cluster is of a ClusterClass.
func (a *assembler) topology() bool {
	return a.cluster.obj.(*flotillav1.Cluster).Spec.Topology != nil
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
			if msg := dnsLabelProblem(name); msg != "" {
				a.p.doc(d, "metadata.name", "%q is not a valid cluster name: %s", name, msg)
			}
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
		if d == a.cluster && len(validation.IsDNS1123Label(clusterNamespace)) > 0 {
			a.p.doc(d, "metadata.namespace", "%q is not a valid namespace: %s", clusterNamespace, dnsLabelRule)
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

// findDatacenter resolves spec.datacenterRef and settles the provider.
func (a *assembler) findDatacenter() {
	c := a.cluster.obj.(*flotillav1.Cluster)
	ref := c.Spec.DatacenterRef
	path := field.NewPath("spec", "datacenterRef")

	var datacenters []*document
	for _, d := range a.docs {
		if d.provider != nil && d.kind.gvk.Kind == d.provider.datacenter.gvk.Kind {
			datacenters = append(datacenters, d)
		}
	}
	hint := ""
	if len(datacenters) == 1 {
		hint = fmt.Sprintf("; the file has %s %q", datacenters[0].kind.gvk.Kind, datacenters[0].obj.GetName())
	}

	switch {
	case ref.Kind == "" && ref.Name == "":
		a.p.cluster(path, "missing; name the provider's datacenter config, such as {kind: LocalDatacenterConfig, name: %s}%s",
			c.Name, hint)
	case ref.Kind == "":
		a.p.cluster(path.Child("kind"), "missing; use one of %s%s", strings.Join(datacenterKinds(), ", "), hint)
	case !slices.Contains(datacenterKinds(), ref.Kind):
		a.p.cluster(path.Child("kind"), "%q is not a datacenter config kind; use one of %s%s",
			ref.Kind, strings.Join(datacenterKinds(), ", "), hint)
	case ref.Name == "":
		a.p.cluster(path.Child("name"), "missing; name the %s%s", ref.Kind, hint)
	}

	for _, d := range datacenters {
		if d.kind.gvk.Kind == ref.Kind && d.obj.GetName() == ref.Name {
			a.datacenter = d
			a.provider = d.provider
		}
	}
	if a.datacenter == nil && ref.Kind != "" && ref.Name != "" && slices.Contains(datacenterKinds(), ref.Kind) {
		a.p.cluster(path, "%s %q not found in %s; add it or fix the name%s", ref.Kind, ref.Name, a.file, hint)
	}
	if a.provider == nil && len(datacenters) == 1 {
		// Keep checking machine config references against the provider the file is for.
		a.provider = datacenters[0].provider
	}
	for _, d := range datacenters {
		if d != a.datacenter && a.datacenter != nil {
			a.p.doc(d, "", "the Cluster uses %s through spec.datacenterRef, and a spec file holds one datacenter config; remove this one",
				a.datacenter.label())
		}
	}
}

// collectMachineConfigs indexes the provider's machine configs and rejects other providers'.
func (a *assembler) collectMachineConfigs() {
	for _, d := range a.docs {
		if d.provider == nil || !d.provider.isMachineConfigKind(d.kind.gvk.Kind) {
			continue
		}
		if a.provider != nil && d.provider.name != a.provider.name {
			a.p.doc(d, "kind", "%s belongs to the %s provider, but the Cluster's datacenter is of the %s provider; use %s",
				d.kind.gvk.Kind, d.provider.name, a.provider.name, a.provider.machineConfig.gvk.Kind)
			continue
		}
		a.machineConfigs[d.obj.GetName()] = d
	}
}

// defaultCluster fills in what the user may leave out.
func (a *assembler) defaultCluster(c *flotillav1.Cluster) {
	c.Status = flotillav1.ClusterStatus{}
	if c.Spec.ControlPlane.Count == 0 {
		c.Spec.ControlPlane.Count = DefaultControlPlaneCount
	}
	if len(c.Spec.ClusterNetwork.Pods) == 0 {
		c.Spec.ClusterNetwork.Pods = []string{DefaultPodCIDR}
	}
	if len(c.Spec.ClusterNetwork.Services) == 0 {
		c.Spec.ClusterNetwork.Services = []string{DefaultServiceCIDR}
	}
	if c.Spec.Management && c.Spec.ManagementCluster.Name == "" {
		c.Spec.ManagementCluster.Name = c.Name
	}
}

// validateCluster checks the Cluster's spec and resolves its version.
func (a *assembler) validateCluster(c *flotillav1.Cluster, s *Spec) {
	spec := field.NewPath("spec")
	s.KubernetesVersion = a.validateVersion(spec.Child("kubernetesVersion"), c.Spec.KubernetesVersion)
	a.validateControlPlane(spec.Child("controlPlane"), c.Spec.ControlPlane)
	a.validateWorkerGroups(spec.Child("workerNodeGroups"), c.Spec.WorkerNodeGroups)

	network := spec.Child("clusterNetwork")
	for i, cidr := range c.Spec.ClusterNetwork.Pods {
		a.checkCIDR(network.Child("pods").Index(i), cidr)
	}
	for i, cidr := range c.Spec.ClusterNetwork.Services {
		a.checkCIDR(network.Child("services").Index(i), cidr)
	}

	mc := c.Spec.ManagementCluster.Name
	switch {
	case c.Spec.Management && mc != c.Name:
		a.p.cluster(spec.Child("managementCluster", "name"), "%q is another cluster, but a management cluster manages itself; "+
			"set it to %q or leave it out", mc, c.Name)
	case mc != "" && dnsLabelProblem(mc) != "":
		a.p.cluster(spec.Child("managementCluster", "name"), "%q is not a valid cluster name: %s", mc, dnsLabelRule)
	}
}

func (a *assembler) validateControlPlane(path *field.Path, cp flotillav1.ControlPlaneConfiguration) {
	if cp.Count < 0 {
		a.p.cluster(path.Child("count"), "%d is negative; a cluster has at least one control plane instance", cp.Count)
	}
	if cp.MachineGroupRef != nil && !a.topology() { // a ClusterClass cluster's is topology.ValidateShape's
		a.checkMachineRef(path.Child("machineGroupRef"), *cp.MachineGroupRef)
	}
	if ep := cp.Endpoint; ep != nil {
		if ep.Host == "" {
			a.p.cluster(path.Child("endpoint", "host"), "missing; set a hostname or IP address, or remove the endpoint to let the provider choose")
		}
		if ep.Port < 1 || ep.Port > 65535 {
			a.p.cluster(path.Child("endpoint", "port"), "%d is not a TCP port; use 1-65535, or remove the endpoint to let the provider choose", ep.Port)
		}
	}
}

func (a *assembler) validateWorkerGroups(path *field.Path, groups []flotillav1.WorkerNodeGroup) {
	seen := map[string]int{}
	for i, g := range groups {
		group := path.Index(i)
		switch {
		case g.Name == "":
			a.p.cluster(group.Child("name"), "missing; name the group, such as md-%d", i)
		case dnsLabelProblem(g.Name) != "" || len(g.Name) > maxWorkerGroupNameLength:
			a.p.cluster(group.Child("name"), "%q is not a valid group name: use at most %d lowercase letters, digits and '-', "+
				"starting and ending with a letter or digit", g.Name, maxWorkerGroupNameLength)
		}
		if first, dup := seen[g.Name]; dup && g.Name != "" {
			a.p.cluster(group.Child("name"), "%q is already the name of spec.workerNodeGroups[%d]; group names are unique", g.Name, first)
		} else {
			seen[g.Name] = i
		}
		if g.Count < 0 {
			a.p.cluster(group.Child("count"), "%d is negative; use 0 or more", g.Count)
		}
		if !a.topology() { // a ClusterClass cluster's groups name a class: topology.ValidateShape
			a.checkMachineRef(group.Child("machineGroupRef"), g.MachineGroupRef)
		}
		for _, err := range metav1validation.ValidateLabels(g.Labels, group.Child("labels")) {
			a.p.doc(a.cluster, err.Field, "%q is not a valid label key or value: %s", err.BadValue, err.Detail)
		}
	}
}

// validateVersion checks spec.kubernetesVersion and returns the full version it resolves to.
func (a *assembler) validateVersion(path *field.Path, v string) string {
	supported := strings.Join(SupportedMinors(), ", ")
	if v == "" {
		a.p.cluster(path, "missing; set the Kubernetes minor version, one of %s", supported)
		return ""
	}
	if !minorVersion.MatchString(v) {
		if full, err := binaries.ResolveMinor(v); err == nil {
			a.p.cluster(path, "%q is not in the minor version form; write %q", v, minorOf(full))
		} else {
			a.p.cluster(path, "%q is not a Kubernetes minor version; use one of %s", v, supported)
		}
		return ""
	}
	full, err := binaries.ResolveMinor(v)
	if err != nil {
		a.p.cluster(path, "Kubernetes %s is not supported; use one of %s", v, supported)
		return ""
	}
	return full
}

// checkMachineRef checks that a machineGroupRef names a machine config of the provider in the
// file.
func (a *assembler) checkMachineRef(path *field.Path, ref flotillav1.Ref) {
	want := strings.Join(machineConfigKinds(), ", ")
	if a.provider != nil {
		want = a.provider.machineConfig.gvk.Kind
	}
	switch {
	case ref.Kind == "" && ref.Name == "":
		a.p.cluster(path, "missing; name a %s in %s", want, a.file)
		return
	case ref.Kind == "":
		a.p.cluster(path.Child("kind"), "missing; use %s", want)
		return
	case a.provider != nil && !a.provider.isMachineConfigKind(ref.Kind):
		a.p.cluster(path.Child("kind"), "%q is not a machine config of the %s provider; use %s", ref.Kind, a.provider.name, want)
		return
	case a.provider == nil && !slices.Contains(machineConfigKinds(), ref.Kind):
		a.p.cluster(path.Child("kind"), "%q is not a machine config kind; use one of %s", ref.Kind, want)
		return
	case ref.Name == "":
		a.p.cluster(path.Child("name"), "missing; name a %s in %s", ref.Kind, a.file)
		return
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

func (a *assembler) checkCIDR(path *field.Path, cidr string) {
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		a.p.cluster(path, "%q is not a CIDR block; write it as address/prefix, such as %s", cidr, DefaultPodCIDR)
	}
}

// dnsLabelRule says what a DNS label is, for messages.
const dnsLabelRule = "use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"

// dnsLabelProblem returns why name is not a DNS label (RFC 1123), or "" when it is one.
func dnsLabelProblem(name string) string {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return ""
	}
	msg := dnsLabelRule
	if fixed := suggestLabel(name); fixed != "" && fixed != name {
		msg += fmt.Sprintf(", such as %q", fixed)
	}
	return msg
}

// suggestLabel turns name into a DNS label if a simple fix does it, or returns "".
func suggestLabel(name string) string {
	fixed := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		case r == '_' || r == '.' || r == ' ':
			return '-'
		default:
			return -1
		}
	}, name)
	fixed = strings.Trim(fixed, "-")
	if len(validation.IsDNS1123Label(fixed)) > 0 {
		return ""
	}
	return fixed
}

// SupportedMinors lists the Kubernetes minor versions a spec may name, newest first: "1.36",
// "1.35" (from pkg/binaries.Supported).
func SupportedMinors() []string {
	minors := make([]string, 0, len(binaries.Supported))
	for _, v := range binaries.Supported {
		minors = append(minors, minorOf(v))
	}
	return minors
}

// minorOf returns "1.36" for "v1.36.3".
func minorOf(version string) string {
	v := strings.TrimPrefix(version, "v")
	if parts := strings.Split(v, "."); len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}

// sortProblems orders problems by line, whole-file problems first.
func sortProblems(list []Problem) {
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
}
