package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/topology"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// Paths the manager's webhook server serves the Cluster webhooks on (controller-runtime derives
// them from the group, version and kind).
const (
	DefaultingPath = "/mutate-cluster-flotilla-dev-v1alpha1-cluster"
	ValidatingPath = "/validate-cluster-flotilla-dev-v1alpha1-cluster"
)

// MaxClusterNameLength bounds a Cluster's name, so that the names derived from it
// (<cluster>-<group>, <cluster>-kubeconfig, flotilla-packages-<cluster>) stay valid.
const MaxClusterNameLength = 40

// maxLabelValueLength bounds MachineDeployment names: CAPI uses them as label values.
const maxLabelValueLength = validation.LabelValueMaxLength

// +kubebuilder:webhook:path=/mutate-cluster-flotilla-dev-v1alpha1-cluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=cluster.flotilla.dev,resources=clusters,verbs=create;update,versions=v1alpha1,name=default.cluster.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-cluster-flotilla-dev-v1alpha1-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=cluster.flotilla.dev,resources=clusters,verbs=create;update,versions=v1alpha1,name=validate.cluster.flotilla.dev,admissionReviewVersions=v1

// Cluster defaults and validates Flotilla Clusters on create and update.
type Cluster struct {
	// Reader lists Clusters to find the management cluster a new workload cluster defaults
	// spec.managementCluster to. Optional: without it that default is left to the client.
	Reader client.Reader

	// ResolveVersion turns spec.kubernetesVersion into a full version, failing for an
	// unsupported one; binaries.ResolveMinor when nil.
	ResolveVersion func(minor string) (string, error)
}

var (
	_ admission.Defaulter[*flotillav1.Cluster] = &Cluster{}
	_ admission.Validator[*flotillav1.Cluster] = &Cluster{}
)

// SetupWebhookWithManager registers the defaulting and the validating webhook with mgr's
// webhook server, at DefaultingPath and ValidatingPath. Reader defaults to mgr's API reader.
func (w *Cluster) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if w.Reader == nil {
		w.Reader = mgr.GetAPIReader()
	}
	err := ctrl.NewWebhookManagedBy(mgr, &flotillav1.Cluster{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
	if err != nil {
		return fmt.Errorf("setting up the Cluster webhooks: %w", err)
	}
	return nil
}

// Default fills in what a Cluster may leave out:
//   - spec.managementCluster.name: a management cluster's own name; for a workload cluster, the
//     name of the one management Cluster this API server holds, when there is exactly one;
//   - spec.controlPlane.count: 1;
//   - spec.clusterNetwork: pods DefaultPodCIDR, services DefaultServiceCIDR.
func (w *Cluster) Default(ctx context.Context, c *flotillav1.Cluster) error {
	if c.Spec.ManagementCluster.Name == "" {
		if c.Spec.Management {
			c.Spec.ManagementCluster.Name = c.Name
		} else if name, err := w.managementClusterName(ctx); err != nil {
			return apierrors.NewInternalError(err)
		} else {
			c.Spec.ManagementCluster.Name = name
		}
	}
	if c.Spec.ControlPlane.Count == 0 {
		c.Spec.ControlPlane.Count = 1
	}
	if len(c.Spec.ClusterNetwork.Pods) == 0 {
		c.Spec.ClusterNetwork.Pods = []string{flotillav1.DefaultPodCIDR}
	}
	if len(c.Spec.ClusterNetwork.Services) == 0 {
		c.Spec.ClusterNetwork.Services = []string{flotillav1.DefaultServiceCIDR}
	}
	return nil
}

// managementClusterName returns the name of the only management Cluster in the API server, or
// "" when there is none or more than one (or no Reader).
func (w *Cluster) managementClusterName(ctx context.Context) (string, error) {
	if w.Reader == nil {
		return "", nil
	}
	clusters := &flotillav1.ClusterList{}
	if err := w.Reader.List(ctx, clusters); err != nil {
		return "", fmt.Errorf("listing Clusters to find the management cluster: %w", err)
	}
	var names []string
	for _, c := range clusters.Items {
		if c.Spec.Management {
			names = append(names, c.Name)
		}
	}
	if len(names) != 1 {
		return "", nil
	}
	return names[0], nil
}

// ValidateCreate checks a new Cluster.
func (w *Cluster) ValidateCreate(ctx context.Context, c *flotillav1.Cluster) (admission.Warnings, error) {
	errs := validateName(c)
	errs = append(errs, w.validateVersion(c)...)
	errs = append(errs, validateRefs(c)...)
	errs = append(errs, topology.ValidateShape(c)...)
	errs = append(errs, w.validateTopologyClass(ctx, nil, c)...)
	errs = append(errs, validateWorkerNodeGroups(c)...)
	errs = append(errs, w.validateWorkerVersions(c)...)
	errs = append(errs, validateClusterNetwork(c)...)
	errs = append(errs, validateManagementCluster(c)...)
	return warnings(c), invalid(c, errs)
}

// ValidateUpdate checks a change. Immutable fields may not change; other rules apply only to
// the fields that changed, so a Cluster created under older rules can still be updated (and its
// finalizer removed).
func (w *Cluster) ValidateUpdate(ctx context.Context, oldC, newC *flotillav1.Cluster) (admission.Warnings, error) {
	errs := validateImmutable(oldC, newC)
	errs = append(errs, validateTopologyImmutable(oldC, newC)...)
	if newC.Spec.Topology != nil && !equality.Semantic.DeepEqual(oldC.Spec, newC.Spec) {
		errs = append(errs, topology.ValidateShape(newC)...)
		errs = append(errs, w.validateTopologyClass(ctx, oldC, newC)...)
	}
	if oldC.Spec.KubernetesVersion != newC.Spec.KubernetesVersion {
		errs = append(errs, w.validateVersion(newC)...)
		errs = append(errs, validateVersionChange(oldC.Spec.KubernetesVersion, newC.Spec.KubernetesVersion)...)
	}
	if !slices.EqualFunc(oldC.Spec.WorkerNodeGroups, newC.Spec.WorkerNodeGroups, sameGroup) ||
		oldC.Spec.ControlPlane.MachineGroupRef != newC.Spec.ControlPlane.MachineGroupRef {
		errs = append(errs, validateRefs(newC)...)
		errs = append(errs, validateWorkerNodeGroups(newC)...)
	}
	if oldC.Spec.KubernetesVersion != newC.Spec.KubernetesVersion || !slices.EqualFunc(oldC.Spec.WorkerNodeGroups, newC.Spec.WorkerNodeGroups, sameVersionPin) {
		errs = append(errs, w.validateWorkerVersions(newC)...)
		errs = append(errs, validateWorkerVersionChanges(oldC, newC)...)
	}
	if oldC.Spec.ManagementCluster != newC.Spec.ManagementCluster {
		errs = append(errs, validateManagementCluster(newC)...)
	}
	return warnings(newC), invalid(newC, errs)
}

// ValidateDelete allows every deletion.
func (w *Cluster) ValidateDelete(context.Context, *flotillav1.Cluster) (admission.Warnings, error) {
	return nil, nil
}

var spec = field.NewPath("spec")

// validateName: a DNS label of at most MaxClusterNameLength characters.
func validateName(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("metadata", "name")
	if len(c.Name) > MaxClusterNameLength {
		errs = append(errs, field.TooLong(path, c.Name, MaxClusterNameLength))
	}
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		errs = append(errs, field.Invalid(path, c.Name, msg))
	}
	return errs
}

// validateVersion: a Kubernetes minor version Flotilla has binaries for.
func (w *Cluster) validateVersion(c *flotillav1.Cluster) field.ErrorList {
	if _, err := w.resolve(c.Spec.KubernetesVersion); err != nil {
		return field.ErrorList{field.Invalid(spec.Child("kubernetesVersion"), c.Spec.KubernetesVersion, err.Error())}
	}
	return nil
}

// resolve resolves a minor version to the full version Flotilla has binaries for.
func (w *Cluster) resolve(minor string) (string, error) {
	if w.ResolveVersion != nil {
		return w.ResolveVersion(minor)
	}
	return binaries.ResolveMinor(minor)
}

// validateVersionChange: one minor version up at a time, never down.
func validateVersionChange(oldVersion, newVersion string) field.ErrorList {
	path := spec.Child("kubernetesVersion")
	oldMajor, oldMinor, okOld := parseMinor(oldVersion)
	newMajor, newMinor, okNew := parseMinor(newVersion)
	switch {
	case !okOld || !okNew:
		return nil // an unparsable version is reported by validateVersion
	case newMajor != oldMajor || newMinor < oldMinor:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("cannot change from %s to %s: downgrades are not supported", oldVersion, newVersion))}
	case newMinor > oldMinor+1:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("cannot change from %s to %s: upgrade one minor version at a time (to %d.%d first)", oldVersion, newVersion, oldMajor, oldMinor+1))}
	}
	return nil
}

// parseMinor parses "1.36" (or "v1.36") into 1 and 36.
func parseMinor(v string) (major, minor int, ok bool) {
	majorStr, minorStr, found := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if !found {
		return 0, 0, false
	}
	major, errMajor := strconv.Atoi(majorStr)
	minor, errMinor := strconv.Atoi(minorStr)
	return major, minor, errMajor == nil && errMinor == nil
}

// validateRefs: the datacenter is a kind Flotilla knows, machine group refs name the machine
// config kind of that datacenter's provider, and gitOpsRef names a GitOpsConfig.
func validateRefs(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	if ref := c.Spec.GitOpsRef; ref != nil && ref.Kind != flotillav1.GitOpsConfigKind {
		errs = append(errs, field.NotSupported(spec.Child("gitOpsRef", "kind"), ref.Kind, []string{flotillav1.GitOpsConfigKind}))
	}
	if c.Spec.Topology != nil {
		return errs // the ClusterClass provides the rest: topology.ValidateShape
	}
	dc := spec.Child("datacenterRef")
	machineKind, known := machineConfigKinds[c.Spec.DatacenterRef.Kind]
	if !known {
		errs = append(errs, field.NotSupported(dc.Child("kind"), c.Spec.DatacenterRef.Kind, datacenterKinds()))
	}
	if c.Spec.DatacenterRef.Name == "" {
		errs = append(errs, field.Required(dc.Child("name"), "names the datacenter config in the Cluster's namespace"))
	}
	checkMachineRef := func(path *field.Path, ref flotillav1.Ref) {
		if known && ref.Kind != machineKind {
			errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{machineKind}))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), "names the machine config in the Cluster's namespace"))
		}
	}
	if ref := c.Spec.ControlPlane.MachineGroupRef; ref != nil {
		checkMachineRef(spec.Child("controlPlane", "machineGroupRef"), *ref)
	}
	for i, group := range c.Spec.WorkerNodeGroups {
		checkMachineRef(spec.Child("workerNodeGroups").Index(i).Child("machineGroupRef"), group.MachineGroupRef)
	}
	return errs
}

// machineConfigKinds maps each datacenter kind Flotilla knows to the machine config kind its
// machineGroupRefs name.
var machineConfigKinds = map[string]string{
	flotillav1.LocalDatacenterConfigKind: flotillav1.LocalMachineConfigKind,
	clusterspec.DatacenterConfigKind:     clusterspec.MachineConfigKind, // the Packet provider
}

func datacenterKinds() []string {
	kinds := make([]string, 0, len(machineConfigKinds))
	for kind := range machineConfigKinds {
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	return kinds
}

// validateWorkerNodeGroups: names are unique DNS labels and the MachineDeployment name
// <cluster>-<group> fits in a label value.
func validateWorkerNodeGroups(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, group := range c.Spec.WorkerNodeGroups {
		path := spec.Child("workerNodeGroups").Index(i).Child("name")
		if seen[group.Name] {
			errs = append(errs, field.Duplicate(path, group.Name))
		}
		seen[group.Name] = true
		for _, msg := range validation.IsDNS1123Label(group.Name) {
			errs = append(errs, field.Invalid(path, group.Name, msg))
		}
		if name := c.Name + "-" + group.Name; len(name) > maxLabelValueLength {
			errs = append(errs, field.Invalid(path, group.Name,
				fmt.Sprintf("the MachineDeployment name %q would be longer than %d characters: shorten the group or the cluster name", name, maxLabelValueLength)))
		}
	}
	return errs
}

// validateWorkerVersions: Kubernetes' version skew policy for the groups that pin a version.
// A group's version is supported, not newer than the cluster's, and at most
// MaxWorkerVersionSkew minor versions older.
func (w *Cluster) validateWorkerVersions(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	clusterMajor, clusterMinor, clusterOK := parseMinor(c.Spec.KubernetesVersion)
	for i, group := range c.Spec.WorkerNodeGroups {
		if group.KubernetesVersion == "" {
			continue
		}
		path := spec.Child("workerNodeGroups").Index(i).Child("kubernetesVersion")
		major, minor, ok := parseMinor(group.KubernetesVersion)
		switch {
		case !ok || !clusterOK:
			// An unparsable version is rejected by the CRD's pattern.
		case major != clusterMajor || minor > clusterMinor:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"%s is newer than spec.kubernetesVersion %s: workers never run a newer version than their control plane; upgrade the cluster first",
				group.KubernetesVersion, c.Spec.KubernetesVersion)))
			continue
		case clusterMinor-minor > flotillav1.MaxWorkerVersionSkew:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"%s is %d minor versions older than spec.kubernetesVersion %s; Kubernetes supports workers at most %d older: upgrade the group to %d.%d or newer first",
				group.KubernetesVersion, clusterMinor-minor, c.Spec.KubernetesVersion, flotillav1.MaxWorkerVersionSkew, major, clusterMinor-flotillav1.MaxWorkerVersionSkew)))
			continue
		}
		if _, err := w.resolve(group.KubernetesVersion); err != nil {
			errs = append(errs, field.Invalid(path, group.KubernetesVersion, err.Error()))
		}
	}
	return errs
}

// validateWorkerVersionChanges: a worker node group's version (the one it pins, else the
// cluster's) moves up, never down. Groups that follow the cluster before and after are left to
// validateVersionChange.
func validateWorkerVersionChanges(oldC, newC *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	for i, group := range newC.Spec.WorkerNodeGroups {
		j := slices.IndexFunc(oldC.Spec.WorkerNodeGroups, func(g flotillav1.WorkerNodeGroup) bool { return g.Name == group.Name })
		if j < 0 || (group.KubernetesVersion == "" && oldC.Spec.WorkerNodeGroups[j].KubernetesVersion == "") {
			continue // new, or following the cluster, whose own version change is checked
		}
		before := cmp.Or(oldC.Spec.WorkerNodeGroups[j].KubernetesVersion, oldC.Spec.KubernetesVersion)
		after := cmp.Or(group.KubernetesVersion, newC.Spec.KubernetesVersion)
		oldMajor, oldMinor, okOld := parseMinor(before)
		newMajor, newMinor, okNew := parseMinor(after)
		if okOld && okNew && (newMajor < oldMajor || (newMajor == oldMajor && newMinor < oldMinor)) {
			errs = append(errs, field.Forbidden(spec.Child("workerNodeGroups").Index(i).Child("kubernetesVersion"),
				fmt.Sprintf("group %q runs %s: cannot go down to %s, downgrades are not supported", group.Name, before, after)))
		}
	}
	return errs
}

// sameVersionPin compares the version two worker node groups pin.
func sameVersionPin(a, b flotillav1.WorkerNodeGroup) bool {
	return a.Name == b.Name && a.KubernetesVersion == b.KubernetesVersion
}

// validateClusterNetwork: every range is a CIDR.
func validateClusterNetwork(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	network := spec.Child("clusterNetwork")
	check := func(name string, ranges []string) {
		for i, cidr := range ranges {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				errs = append(errs, field.Invalid(network.Child(name).Index(i), cidr, "must be a CIDR such as 10.96.0.0/12"))
			}
		}
	}
	check("pods", c.Spec.ClusterNetwork.Pods)
	check("services", c.Spec.ClusterNetwork.Services)
	return errs
}

// validateManagementCluster: a management cluster manages itself.
func validateManagementCluster(c *flotillav1.Cluster) field.ErrorList {
	if name := c.Spec.ManagementCluster.Name; c.Spec.Management && name != "" && name != c.Name {
		return field.ErrorList{field.Invalid(spec.Child("managementCluster", "name"), name,
			fmt.Sprintf("a management cluster manages itself: must be %q", c.Name))}
	}
	return nil
}

// validateImmutable: management, datacenterRef, gitOpsRef, the control plane endpoint once set,
// and clusterNetwork (which may only go from unset to the defaults, for Clusters created before
// the defaulting webhook ran).
func validateImmutable(oldC, newC *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	if oldC.Spec.Management != newC.Spec.Management {
		msg := "is immutable: a management cluster cannot become a workload cluster"
		if newC.Spec.Management {
			msg = "is immutable: a workload cluster cannot become a management cluster in place; create a new management cluster"
		}
		errs = append(errs, field.Forbidden(spec.Child("management"), msg))
	}
	if oldC.Spec.DatacenterRef != newC.Spec.DatacenterRef {
		errs = append(errs, field.Forbidden(spec.Child("datacenterRef"), "is immutable"))
	}
	if !ptr.Equal(oldC.Spec.GitOpsRef, newC.Spec.GitOpsRef) {
		errs = append(errs, field.Forbidden(spec.Child("gitOpsRef"), "is immutable: a cluster keeps the GitOpsConfig it was created with"))
	}
	if oldEP := oldC.Spec.ControlPlane.Endpoint; oldEP != nil {
		if newEP := newC.Spec.ControlPlane.Endpoint; newEP == nil || *newEP != *oldEP {
			errs = append(errs, field.Forbidden(spec.Child("controlPlane", "endpoint"), "is immutable once set"))
		}
	}
	network := spec.Child("clusterNetwork")
	if !rangesUnchanged(oldC.Spec.ClusterNetwork.Pods, newC.Spec.ClusterNetwork.Pods, flotillav1.DefaultPodCIDR) {
		errs = append(errs, field.Forbidden(network.Child("pods"), "is immutable"))
	}
	if !rangesUnchanged(oldC.Spec.ClusterNetwork.Services, newC.Spec.ClusterNetwork.Services, flotillav1.DefaultServiceCIDR) {
		errs = append(errs, field.Forbidden(network.Child("services"), "is immutable"))
	}
	return errs
}

// rangesUnchanged: equal, or unset before and defaulted now.
func rangesUnchanged(oldRanges, newRanges []string, def string) bool {
	return slices.Equal(oldRanges, newRanges) || (len(oldRanges) == 0 && slices.Equal(newRanges, []string{def}))
}

func sameGroup(a, b flotillav1.WorkerNodeGroup) bool {
	return a.Name == b.Name && a.MachineGroupRef == b.MachineGroupRef && a.Class == b.Class
}

// warnings: what is allowed but does not do what it may seem to.
func warnings(c *flotillav1.Cluster) admission.Warnings {
	if c.Spec.DatacenterRef.Kind == flotillav1.LocalDatacenterConfigKind && c.Spec.ControlPlane.Count > 1 {
		return admission.Warnings{fmt.Sprintf("spec.controlPlane.count: the local provider runs one hosted control plane per cluster; count %d is treated as 1", c.Spec.ControlPlane.Count)}
	}
	return nil
}

// invalid turns field errors into the API's Invalid status, naming each field.
func invalid(c *flotillav1.Cluster, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(flotillav1.GroupVersion.WithKind("Cluster").GroupKind(), c.Name, errs)
}
