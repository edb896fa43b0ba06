package validation

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/fielderrors"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

var spec = field.NewPath("spec")

// DefaultCluster fills in what a Cluster may leave out and needs no lookup to decide:
// spec.controlPlane.count 1, spec.clusterNetwork (DefaultPodCIDR, DefaultServiceCIDR), and a
// management cluster's spec.managementCluster.name (its own name). A workload cluster's
// spec.managementCluster.name is left to who knows the management cluster: the webhook, from
// the Clusters of its API server, and the CLI, from --kubeconfig.
func DefaultCluster(c *flotillav1.Cluster) {
	if c.Spec.ControlPlane.Count == 0 {
		c.Spec.ControlPlane.Count = 1
	}
	if len(c.Spec.ClusterNetwork.Pods) == 0 {
		c.Spec.ClusterNetwork.Pods = []string{flotillav1.DefaultPodCIDR}
	}
	if len(c.Spec.ClusterNetwork.Services) == 0 {
		c.Spec.ClusterNetwork.Services = []string{flotillav1.DefaultServiceCIDR}
	}
	if c.Spec.Management && c.Spec.ManagementCluster.Name == "" {
		c.Spec.ManagementCluster.Name = c.Name
	}
}

// ValidateCluster checks a new Cluster, defaulted by DefaultCluster.
func ValidateCluster(c *flotillav1.Cluster) field.ErrorList {
	errs := ValidateClusterName(c.Name, field.NewPath("metadata", "name"))
	errs = append(errs, validateVersion(spec.Child("kubernetesVersion"), c.Spec.KubernetesVersion)...)
	errs = append(errs, validateDatacenterRef(c)...)
	errs = append(errs, validateShape(c)...) // topology.go
	errs = append(errs, validateControlPlane(c)...)
	errs = append(errs, validateWorkerNodeGroups(c, func(int) bool { return true })...)
	errs = append(errs, validateWorkerVersions(c)...)
	errs = append(errs, validateClusterNetwork(c)...)
	errs = append(errs, validateManagement(c)...)
	errs = append(errs, validateGitOpsRef(c)...)
	errs = append(errs, validateProxy(c)...)
	return errs
}

// ValidateClusterName checks the name of a Cluster: a DNS label of at most
// MaxClusterNameLength characters. path is where the name is, for the error.
func ValidateClusterName(name string, path *field.Path) field.ErrorList {
	if msg := DNSLabelProblem(name, MaxClusterNameLength); msg != "" {
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf("%q is not a valid cluster name: %s", name, msg))}
	}
	return nil
}

// validateVersion: a Kubernetes minor version ("1.36") that Flotilla has binaries for.
func validateVersion(path *field.Path, v string) field.ErrorList {
	supported := strings.Join(binaries.SupportedMinors(), ", ")
	if v == "" {
		return field.ErrorList{field.Required(path, "set the Kubernetes minor version, one of "+supported)}
	}
	parsed, err := kubeversion.Parse(v)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("%q is not a Kubernetes minor version; use one of %s", v, supported))}
	case parsed.HasPatch || strings.HasPrefix(v, "v"):
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("%q is not in the minor version form; write %q", v, parsed.MinorString()))}
	}
	if _, err := binaries.ResolveMinor(v); err != nil {
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("Kubernetes %s is not supported; use one of %s", v, supported))}
	}
	return nil
}

// validateDatacenterRef: the datacenter config is of a provider's kind, and named; a Cluster of
// a ClusterClass has none (validateShape).
func validateDatacenterRef(c *flotillav1.Cluster) field.ErrorList {
	if c.Spec.Topology != nil {
		return nil
	}
	path := spec.Child("datacenterRef")
	ref := c.Spec.DatacenterRef
	kinds := strings.Join(providers.DatacenterKinds(), ", ")
	_, known := providers.OfDatacenterKind(ref.Kind)
	switch {
	case ref.Kind == "" && ref.Name == "":
		return field.ErrorList{field.Required(path, fmt.Sprintf("name the provider's datacenter config, such as {kind: %s, name: %s}",
			flotillav1.LocalDatacenterConfigKind, c.Name))}
	case ref.Kind == "":
		return field.ErrorList{field.Required(path.Child("kind"), "use one of "+kinds)}
	case !known:
		return field.ErrorList{fielderrors.NotSupported(path.Child("kind"), ref.Kind, fmt.Sprintf("%q is not a datacenter config kind; use one of %s", ref.Kind, kinds))}
	case ref.Name == "":
		return field.ErrorList{field.Required(path.Child("name"), "name the "+ref.Kind)}
	}
	return nil
}

// validateMachineRef: a machineGroupRef names a machine config of the cluster's provider (of any
// provider when the datacenter's kind is not known); a Cluster of a ClusterClass names none
// (validateShape).
func validateMachineRef(c *flotillav1.Cluster, path *field.Path, ref flotillav1.Ref) field.ErrorList {
	if c.Spec.Topology != nil {
		return nil
	}
	p, known := providers.OfDatacenterKind(c.Spec.DatacenterRef.Kind)
	want := strings.Join(providers.MachineConfigKinds(), " or ")
	if known {
		want = p.MachineConfig.Kind
	}
	switch {
	case ref.Kind == "" && ref.Name == "":
		return field.ErrorList{field.Required(path, "name a "+want)}
	case ref.Kind == "":
		return field.ErrorList{field.Required(path.Child("kind"), "use "+want)}
	case known && ref.Kind != p.MachineConfig.Kind:
		return field.ErrorList{fielderrors.NotSupported(path.Child("kind"), ref.Kind,
			fmt.Sprintf("%q is not a machine config of the %s provider; use %s", ref.Kind, p.Name, want))}
	case !known && !slices.Contains(providers.MachineConfigKinds(), ref.Kind):
		return field.ErrorList{fielderrors.NotSupported(path.Child("kind"), ref.Kind, fmt.Sprintf("%q is not a machine config kind; use %s", ref.Kind, want))}
	case ref.Name == "":
		return field.ErrorList{field.Required(path.Child("name"), "name a "+ref.Kind)}
	}
	return nil
}

// validateControlPlane: the count, the endpoint and the machine config of the control plane.
func validateControlPlane(c *flotillav1.Cluster) field.ErrorList {
	errs := validateControlPlaneCount(c)
	errs = append(errs, validateEndpoint(c)...)
	return append(errs, validateControlPlaneRef(c)...)
}

// validateControlPlaneCount: at least one instance, and one for the local provider, which runs
// one hosted control plane per cluster.
func validateControlPlaneCount(c *flotillav1.Cluster) field.ErrorList {
	path := spec.Child("controlPlane", "count")
	switch count := c.Spec.ControlPlane.Count; {
	case count < 1:
		return field.ErrorList{field.Invalid(path, count,
			fmt.Sprintf("%d is not a number of instances; a cluster has at least one control plane instance", count))}
	case count > 1 && c.Spec.DatacenterRef.Kind == providers.Local.DatacenterConfig.Kind:
		return field.ErrorList{field.Invalid(path, count, "the local provider runs one hosted control plane per cluster; set it to 1")}
	}
	return nil
}

// validateEndpoint: an endpoint, when set, has a host and a TCP port.
func validateEndpoint(c *flotillav1.Cluster) field.ErrorList {
	ep := c.Spec.ControlPlane.Endpoint
	if ep == nil {
		return nil
	}
	var errs field.ErrorList
	path := spec.Child("controlPlane", "endpoint")
	if ep.Host == "" {
		errs = append(errs, field.Required(path.Child("host"),
			"set a hostname or IP address, or remove the endpoint to let the provider choose"))
	}
	if ep.Port < 1 || ep.Port > 65535 {
		errs = append(errs, field.Invalid(path.Child("port"), ep.Port,
			fmt.Sprintf("%d is not a TCP port; use 1-65535, or remove the endpoint to let the provider choose", ep.Port)))
	}
	return errs
}

// validateControlPlaneRef: the control plane's machine config is of the cluster's provider; a
// Packet cluster needs one for its control plane devices.
func validateControlPlaneRef(c *flotillav1.Cluster) field.ErrorList {
	path := spec.Child("controlPlane", "machineGroupRef")
	switch ref := c.Spec.ControlPlane.MachineGroupRef; {
	case ref != nil:
		return validateMachineRef(c, path, *ref)
	case c.Spec.DatacenterRef.Kind == providers.Packet.DatacenterConfig.Kind:
		return field.ErrorList{field.Required(path, "name the "+providers.Packet.MachineConfig.Kind+" of the control plane devices")}
	}
	return nil
}

// validateWorkerNodeGroups: group names are unique; each group for which check is true has a
// name that is a DNS label of at most MaxWorkerNodeGroupNameLength characters and makes a
// MachineDeployment name <cluster>-<group> that fits in a label value, a count that is not
// negative, a machine config of the cluster's provider, and valid Node labels.
func validateWorkerNodeGroups(c *flotillav1.Cluster, check func(i int) bool) field.ErrorList {
	var errs field.ErrorList
	first := map[string]int{}
	for i, group := range c.Spec.WorkerNodeGroups {
		path := spec.Child("workerNodeGroups").Index(i)
		if j, dup := first[group.Name]; dup && group.Name != "" {
			errs = append(errs, duplicate(path.Child("name"), group.Name,
				fmt.Sprintf("%q is already the name of spec.workerNodeGroups[%d]; group names are unique", group.Name, j)))
		} else {
			first[group.Name] = i
		}
		if !check(i) {
			continue
		}
		errs = append(errs, validateWorkerNodeGroup(c, path, group)...)
	}
	return errs
}

func validateWorkerNodeGroup(c *flotillav1.Cluster, path *field.Path, group flotillav1.WorkerNodeGroup) field.ErrorList {
	var errs field.ErrorList
	name := path.Child("name")
	switch {
	case group.Name == "":
		errs = append(errs, field.Required(name, "name the group, such as md-0"))
	case DNSLabelProblem(group.Name, MaxWorkerNodeGroupNameLength) != "":
		errs = append(errs, field.Invalid(name, group.Name, fmt.Sprintf("%q is not a valid group name: %s",
			group.Name, DNSLabelProblem(group.Name, MaxWorkerNodeGroupNameLength))))
	case len(c.Name+"-"+group.Name) > maxLabelValueLength:
		errs = append(errs, field.Invalid(name, group.Name, fmt.Sprintf(
			"the MachineDeployment name %q would be longer than %d characters: shorten the group or the cluster name",
			c.Name+"-"+group.Name, maxLabelValueLength)))
	}
	if group.Count < 0 {
		errs = append(errs, field.Invalid(path.Child("count"), group.Count, fmt.Sprintf("%d is negative; use 0 or more", group.Count)))
	}
	errs = append(errs, validateMachineRef(c, path.Child("machineGroupRef"), group.MachineGroupRef)...)
	switch group.NodesOf() {
	case flotillav1.SimulatedNodes:
	case flotillav1.RealNodes:
		if c.Spec.DatacenterRef.Kind != providers.Local.DatacenterConfig.Kind {
			errs = append(errs, field.Forbidden(path.Child("nodes"), fmt.Sprintf(
				"real nodes run on the management cluster's host, with the %s provider only; a %s cluster's machines are real anyway: leave it out",
				providers.Local.Name, c.Spec.DatacenterRef.Kind)))
		}
	default:
		errs = append(errs, fielderrors.NotSupported(path.Child("nodes"), group.Nodes, fmt.Sprintf("%q is not a kind of nodes; use %s or %s",
			group.Nodes, flotillav1.SimulatedNodes, flotillav1.RealNodes)))
	}
	for _, err := range metav1validation.ValidateLabels(group.Labels, path.Child("labels")) {
		errs = append(errs, field.Invalid(path.Child("labels"), err.BadValue,
			fmt.Sprintf("%q is not a valid label key or value: %s", err.BadValue, err.Detail)))
	}
	return errs
}

// validateWorkerVersions: Kubernetes' version skew policy for the groups that pin a version.
// A group's version is a supported minor version, not newer than the cluster's, and at most
// MaxWorkerVersionSkew minor versions older.
func validateWorkerVersions(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	cluster, clusterErr := kubeversion.Parse(c.Spec.KubernetesVersion)
	for i, group := range c.Spec.WorkerNodeGroups {
		if group.KubernetesVersion == "" {
			continue
		}
		path := spec.Child("workerNodeGroups").Index(i).Child("kubernetesVersion")
		v, err := kubeversion.Parse(group.KubernetesVersion)
		switch {
		case err != nil || clusterErr != nil:
			// validateVersion says what is wrong with either.
		case v.Major != cluster.Major || v.Minor > cluster.Minor:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"%s is newer than spec.kubernetesVersion %s: workers never run a newer version than their control plane; upgrade the cluster first",
				group.KubernetesVersion, c.Spec.KubernetesVersion)))
			continue
		case cluster.Minor-v.Minor > flotillav1.MaxWorkerVersionSkew:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"%s is %d minor versions older than spec.kubernetesVersion %s; Kubernetes supports workers at most %d older: upgrade the group to %d.%d or newer first",
				group.KubernetesVersion, cluster.Minor-v.Minor, c.Spec.KubernetesVersion, flotillav1.MaxWorkerVersionSkew, v.Major, cluster.Minor-flotillav1.MaxWorkerVersionSkew)))
			continue
		}
		errs = append(errs, validateVersion(path, group.KubernetesVersion)...)
	}
	return errs
}

// validateClusterNetwork: every range is a CIDR.
func validateClusterNetwork(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	network := spec.Child("clusterNetwork")
	check := func(name string, ranges []string) {
		for i, cidr := range ranges {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				errs = append(errs, field.Invalid(network.Child(name).Index(i), cidr,
					fmt.Sprintf("%q is not a CIDR block; write it as address/prefix, such as %s", cidr, flotillav1.DefaultPodCIDR)))
			}
		}
	}
	check("pods", c.Spec.ClusterNetwork.Pods)
	check("services", c.Spec.ClusterNetwork.Services)
	if len(errs) == 0 && localspec.HasRealNodes(c) {
		errs = append(errs, validateRealNodeNetwork(c)...)
	}
	return errs
}

// validateRealNodeNetwork: real nodes get a /24 of the first Pod range each, an IPv4 range of
// /24 or larger that does not overlap the Service range.
func validateRealNodeNetwork(c *flotillav1.Cluster) field.ErrorList {
	network := spec.Child("clusterNetwork")
	pods, _ := netip.ParsePrefix(c.Spec.ClusterNetwork.Pods[0])
	if !pods.Addr().Is4() || pods.Bits() > 24 {
		return field.ErrorList{field.Invalid(network.Child("pods").Index(0), c.Spec.ClusterNetwork.Pods[0],
			"real nodes get a /24 of the Pod range each: use an IPv4 range of /24 or larger, such as "+flotillav1.DefaultPodCIDR)}
	}
	for i, cidr := range c.Spec.ClusterNetwork.Services {
		if services, _ := netip.ParsePrefix(cidr); services.Overlaps(pods) {
			return field.ErrorList{field.Invalid(network.Child("services").Index(i), cidr,
				fmt.Sprintf("overlaps the Pod range %s, where real nodes' Pods get their addresses; use ranges apart", pods))}
		}
	}
	return nil
}

// validateManagement: a management cluster manages itself and runs on the local provider (a
// Packet cluster is a workload cluster), and spec.managementCluster.name is a cluster name.
func validateManagement(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	if c.Spec.Management && c.Spec.DatacenterRef.Kind == providers.Packet.DatacenterConfig.Kind {
		errs = append(errs, field.Forbidden(spec.Child("management"),
			"a Packet cluster is a workload cluster: set it to false, and create the cluster from a management cluster (flotilla create cluster --kubeconfig MGMT.kubeconfig)"))
	}
	path := spec.Child("managementCluster", "name")
	switch name := c.Spec.ManagementCluster.Name; {
	case c.Spec.Management && name != "" && name != c.Name:
		errs = append(errs, field.Invalid(path, name,
			fmt.Sprintf("%q is another cluster, but a management cluster manages itself; set it to %q or leave it out", name, c.Name)))
	case name != "":
		errs = append(errs, ValidateClusterName(name, path)...)
	}
	return errs
}

// validateProxy: proxy is a management cluster's (its manager's process environment), each
// proxy an http:// or https:// URL with a host, and each noProxy entry a host, address, CIDR
// block or "*", without a scheme or a path.
func validateProxy(c *flotillav1.Cluster) field.ErrorList {
	p := c.Spec.Proxy
	path := spec.Child("proxy")
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if !c.Spec.Management {
		errs = append(errs, field.Forbidden(path, "the proxy is that of a management cluster's manager: set it on the management cluster, whose manager makes every registry, chart and Git fetch of its workload clusters"))
	}
	for _, f := range []struct {
		name, value string
	}{{"httpProxy", p.HTTPProxy}, {"httpsProxy", p.HTTPSProxy}} {
		if f.value == "" {
			continue
		}
		u, err := url.Parse(f.value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, "give the proxy's URL, such as http://proxy.example.com:3128"))
		}
	}
	if p.HTTPProxy == "" && p.HTTPSProxy == "" {
		errs = append(errs, field.Required(path, "set httpProxy, httpsProxy or both, or leave proxy out"))
	}
	for i, h := range p.NoProxy {
		if !validNoProxy(h) {
			errs = append(errs, field.Invalid(path.Child("noProxy").Index(i), h, "give a host name, an IP address, a CIDR block (each but the block with an optional :port) or *"))
		}
	}
	return errs
}

// validNoProxy is true for what Go's NO_PROXY matching understands: "*", a CIDR block, or an IP
// address or domain name (a leading dot allowed) with an optional port.
func validNoProxy(h string) bool {
	if h == "*" {
		return true
	}
	if _, err := netip.ParsePrefix(h); err == nil {
		return true
	}
	if strings.Contains(h, "/") {
		return false
	}
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil && port != "" {
		host = hh
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return len(validation.IsDNS1123Subdomain(strings.ToLower(strings.TrimPrefix(host, ".")))) == 0
}

// validateGitOpsRef: gitOpsRef, when set, names a GitOpsConfig.
func validateGitOpsRef(c *flotillav1.Cluster) field.ErrorList {
	ref := c.Spec.GitOpsRef
	path := spec.Child("gitOpsRef")
	switch {
	case ref == nil:
		return nil
	case ref.Kind != flotillav1.GitOpsConfigKind:
		return field.ErrorList{fielderrors.NotSupported(path.Child("kind"), ref.Kind, fmt.Sprintf("%q is not supported; use %s", ref.Kind, flotillav1.GitOpsConfigKind))}
	case ref.Name == "":
		return field.ErrorList{field.Required(path.Child("name"), "name the GitOpsConfig")}
	}
	return nil
}

// duplicate is field.Duplicate with a detail that says where the value is already.
func duplicate(path *field.Path, value any, detail string) *field.Error {
	err := field.Duplicate(path, value)
	err.Detail = detail
	return err
}
