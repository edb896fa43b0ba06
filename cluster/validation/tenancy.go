package validation

import (
	"fmt"
	"slices"
	"net/netip"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/pkg/netaddr"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// The rules of a management cluster shared by tenants: what a Cluster may be given the other
// Clusters of its API server, and what only an admin may ask for. They need what only the
// webhook knows (the other Clusters, who sends the request), so the CLI does not run them on a
// spec file; the webhook passes that knowledge in, and the rules stay pure.

// ValidateClusterPeers checks a new Cluster against the other Clusters of its API server
// (others; c itself, if listed, is skipped):
//   - its name is not taken in another namespace: the packages namespace, the
//     PackageBundleController, the local control plane's data directory and the GitOps path of
//     a cluster are named after its name alone, so names are unique across namespaces;
//   - a management cluster is the only one: the webhook defaults workload clusters to it and
//     GitOps syncs its directory, which a second one makes ambiguous.
func ValidateClusterPeers(c *flotillav1.Cluster, others []flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	for i := range others {
		o := &others[i]
		if o.Namespace == c.Namespace && o.Name == c.Name {
			continue
		}
		if o.Name == c.Name {
			errs = append(errs, duplicate(field.NewPath("metadata", "name"), c.Name, fmt.Sprintf(
				"%q is taken by a Cluster in namespace %q: cluster names are unique across the namespaces of a management cluster "+
					"(a cluster's packages namespace, data directory and GitOps path are named after it); choose another name",
				c.Name, o.Namespace)))
		}
		if c.Spec.Management && o.Spec.Management {
			errs = append(errs, field.Forbidden(spec.Child("management"), fmt.Sprintf(
				"this API server already holds management Cluster %s/%s, and holds one at most (workload clusters default to it, GitOps syncs its directory); "+
					"create a workload cluster (management: false)", o.Namespace, o.Name)))
		}
	}
	return errs
}

// Request is what the webhooks tell ValidateClusterRequest and
// ValidateLocalDatacenterConfigRequest about a request.
type Request struct {
	// Admin is true when the request comes from an identity the admin configured (a user or a
	// group the manager trusts as admin).
	Admin bool
	// ManagementCluster is the name of the one management Cluster of the API server: what a
	// workload cluster's spec.managementCluster.name defaults to; "" when there is none, or more
	// than one.
	ManagementCluster string
}

// ValidateClusterRequest checks what only an admin may ask for, on create (oldC nil) and on
// update. A request that does not come from an admin may not:
//   - create a management cluster (spec.management true): its packages run with the manager's
//     own credentials, and it manages every cluster of the API server;
//   - set spec.managementCluster.name to anything but the API server's management cluster (on
//     create), or change it (on update; its default filled in later is no change);
//   - give a local cluster a control plane endpoint host that is not a loopback address: a local
//     control plane serves on the management cluster's machine, on all its interfaces when its
//     host is 0.0.0.0;
//   - change the spec of a management cluster at all (its versions, worker groups, proxy...):
//     it runs the manager, and a change to it is an admin's even where a tenant role is bound
//     in its namespace, as the GitOps applier of the management cluster's repository is.
//
// spec.management itself is immutable for everyone (ValidateClusterUpdate).
func ValidateClusterRequest(oldC, newC *flotillav1.Cluster, who Request) field.ErrorList {
	if who.Admin {
		return nil
	}
	var errs field.ErrorList
	if oldC != nil && oldC.Spec.Management && !equality.Semantic.DeepEqual(oldC.Spec, newC.Spec) {
		return field.ErrorList{field.Forbidden(spec, fmt.Sprintf(onlyAdmins,
			"change a management cluster", "ask an admin, who changes it with `flotilla upgrade cluster` and the admin kubeconfig"))}
	}
	if oldC == nil && newC.Spec.Management {
		errs = append(errs, field.Forbidden(spec.Child("management"), fmt.Sprintf(onlyAdmins,
			"create a management cluster", "create a workload cluster (management: false)")))
	}
	path := spec.Child("managementCluster", "name")
	switch name := newC.Spec.ManagementCluster.Name; {
	case newC.Spec.Management:
		// A management cluster names itself (validateManagement).
	case oldC == nil && name != "" && name != who.ManagementCluster:
		errs = append(errs, field.Forbidden(path, fmt.Sprintf(onlyAdmins,
			fmt.Sprintf("name a management cluster other than this API server's (%s)", orNone(who.ManagementCluster)),
			"leave spec.managementCluster out: it is filled in")))
	case oldC != nil && name != oldC.Spec.ManagementCluster.Name &&
		(oldC.Spec.ManagementCluster.Name != "" || name != who.ManagementCluster):
		errs = append(errs, field.Forbidden(path, fmt.Sprintf(onlyAdmins,
			fmt.Sprintf("change it (from %q to %q)", oldC.Spec.ManagementCluster.Name, name), "leave it as it is")))
	}
	if ep := newC.Spec.ControlPlane.Endpoint; ep != nil && newC.Spec.DatacenterRef.Kind == providers.Local.DatacenterConfig.Kind &&
		!netaddr.IsLoopback(ep.Host) && (oldC == nil || oldC.Spec.ControlPlane.Endpoint == nil || *oldC.Spec.ControlPlane.Endpoint != *ep) {
		errs = append(errs, field.Forbidden(spec.Child("controlPlane", "endpoint", "host"), fmt.Sprintf(onlyAdmins,
			fmt.Sprintf("let a local control plane serve on %q, which is not a loopback address", ep.Host),
			"use 127.0.0.1, or leave the endpoint out to let the provider choose")))
	}
	return errs
}

// ValidateClusterDeleteRequest checks that a request to delete a management Cluster comes from an
// admin: deleting it tears down the manager's own control plane and every cluster it manages.
func ValidateClusterDeleteRequest(c *flotillav1.Cluster, who Request) field.ErrorList {
	if who.Admin || !c.Spec.Management {
		return nil
	}
	return field.ErrorList{field.Forbidden(spec.Child("management"), fmt.Sprintf(onlyAdmins,
		"delete a management cluster", "ask an admin, who deletes it with `flotilla delete cluster`"))}
}

// ValidateManagementConfigRequest checks that a change or a deletion of the provider config kind
// name comes from an admin when a management Cluster among clusters (those of the config's
// namespace) names it: a management cluster's machines and its control plane's settings (such as
// whether kube-controller-manager runs) are its configs', so they are an admin's as its spec is
// (ValidateClusterRequest), whatever role is bound in its namespace.
func ValidateManagementConfigRequest(kind, name string, clusters []flotillav1.Cluster, who Request) field.ErrorList {
	if who.Admin {
		return nil
	}
	for _, c := range clusters {
		if c.Spec.Management && namesConfig(&c, kind, name) {
			return field.ErrorList{field.Forbidden(spec, fmt.Sprintf(onlyAdmins,
				fmt.Sprintf("change or delete a config of management cluster %s", c.Name),
				"ask an admin, who changes it with `flotilla upgrade cluster` and the admin kubeconfig"))}
		}
	}
	return nil
}

// namesConfig reports whether c's datacenterRef or one of its machineGroupRefs names the config
// kind name.
func namesConfig(c *flotillav1.Cluster, kind, name string) bool {
	refs := []flotillav1.Ref{c.Spec.DatacenterRef}
	if r := c.Spec.ControlPlane.MachineGroupRef; r != nil {
		refs = append(refs, *r)
	}
	for _, g := range c.Spec.WorkerNodeGroups {
		refs = append(refs, g.MachineGroupRef)
	}
	return slices.Contains(refs, flotillav1.Ref{Kind: kind, Name: name})
}

// onlyAdmins says what only an admin may do (%s), and what to do instead (%s).
const onlyAdmins = "only an admin may %s (a user or group the manager trusts as admin: see docs/security.md); %s"

// ValidateLocalDatacenterConfigRequest checks what only an admin may ask of a
// LocalDatacenterConfig, on create (oldDC nil) and on update: an imageMirror at another port
// than the embedded registry's (infrav1.DefaultImageMirror), set or changed. Each real node
// reaches its mirror's port at 127.0.0.1 through its gateway, so the port is a door from the
// nodes, and from the Pods of the cluster's owner, to this machine's loopback, where other
// clusters' API servers and etcds listen too. The management cluster's mirror (the ConfigMap
// flotilla-system/registry-mirror) is an admin's already. And a nodeNetwork outside
// nodenet.DefaultPool, set or changed: the machine routes a node network to the cluster's
// bridge, so a range it reached before (through any route, its default route included: a LAN
// beyond its gateway) would be taken from every program on it, and its traffic handed to the
// tenant's nodes.
func ValidateLocalDatacenterConfigRequest(oldDC, newDC *infrav1.LocalDatacenterConfig, who Request) field.ErrorList {
	if who.Admin {
		return nil
	}
	var old infrav1.LocalDatacenterConfigSpec
	if oldDC != nil {
		old = oldDC.Spec
	}
	return append(validateTenantImageMirror(old.ImageMirror, newDC.Spec.ImageMirror),
		validateTenantNodeNetwork(old.NodeNetwork, newDC.Spec.NodeNetwork)...)
}

// validateTenantNodeNetwork: a tenant's nodeNetwork, set or changed, lies in nodenet.DefaultPool.
func validateTenantNodeNetwork(old, network string) field.ErrorList {
	prefix, err := netip.ParsePrefix(network)
	if network == "" || network == old || err != nil || nodenet.InPool(prefix) {
		return nil // ValidateLocalDatacenterConfig refuses what is not a range
	}
	return field.ErrorList{field.Forbidden(spec.Child("nodeNetwork"), fmt.Sprintf(onlyAdmins,
		fmt.Sprintf("name a node network outside %s (%s: this machine would route it to the cluster's nodes instead of where it reaches it now, through its default route if no other)", nodenet.DefaultPool, network),
		fmt.Sprintf("leave nodeNetwork out to get a free /%d of %s, or name a range inside it", nodenet.NetworkBits, nodenet.DefaultPool)))}
}

// validateTenantImageMirror: a tenant's imageMirror, set or changed, is the embedded registry.
func validateTenantImageMirror(old, mirror string) field.ErrorList {
	if mirror == "" || old == mirror {
		return nil
	}
	port, err := nodenet.LoopbackPort(mirror)
	embedded, _ := nodenet.LoopbackPort(infrav1.DefaultImageMirror)
	if err != nil || port == embedded {
		return nil // ValidateLocalDatacenterConfig refuses what is not a loopback port
	}
	return field.ErrorList{field.Forbidden(spec.Child("imageMirror"), fmt.Sprintf(onlyAdmins,
		fmt.Sprintf("forward another port of this machine (%q) into the nodes' network", mirror),
		"leave imageMirror out to use the embedded registry ("+infrav1.DefaultImageMirror+"), or ask an admin to set the management cluster's mirror (ConfigMap flotilla-system/registry-mirror)"))}
}

// orNone quotes name, or says there is none.
func orNone(name string) string {
	if name == "" {
		return "none, or more than one"
	}
	return fmt.Sprintf("%q", name)
}
