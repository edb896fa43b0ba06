package cluster

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// provider is the part of the reconciler that depends on a Cluster's infrastructure provider.
// providerFor picks one per reconcile, from the spec alone; the phases call it and nothing else
// in the reconciler asks which provider a Cluster has. A provider keeps what it reads about one
// Cluster (its configs, its objects) in its own fields for the length of one reconcile.
//
// Every method but observe and resolve is pure: it decides from what observe and resolve read.
type provider interface {
	// observe reads the provider's objects of the cluster from the cache, and sets
	// s.controlPlaneVersion. The CAPI Cluster and the MachineDeployments are read for every
	// provider before (scope).
	observe(ctx context.Context, s *scope) error

	// resolve checks the spec's provider references against the world (the configs, the
	// ClusterClass they name exist and are of the right kind) and keeps what it reads. What is
	// wrong is appended to errs, each error naming its field; only failures to read are
	// returned.
	resolve(ctx context.Context, s *scope, errs *field.ErrorList) error

	// completeCAPICluster sets on the CAPI Cluster what it points at: the infrastructure
	// cluster and the control plane, or a topology. It reads the spec alone, so that the CAPI
	// Cluster can be applied before the spec's references are resolved.
	completeCAPICluster(s *scope, capi *clusterv1.Cluster)

	// desired returns the objects to apply after the CAPI Cluster, in order: the control plane's
	// first, then the workers'. Called only when the spec is valid.
	desired(s *scope) ([]ctrlclient.Object, error)

	// obsolete returns the objects to delete: those of worker node groups the spec no longer
	// has.
	obsolete(s *scope) []ctrlclient.Object

	// setStatus sets status.kubernetesVersion and the ControlPlaneReady and WorkersReady
	// conditions (pure; see cluster_controller_status.go for the rest of the status).
	setStatus(s *scope)
}

// parts are the reconciler's parts of the providers of the registry (infrastructure/providers),
// by provider name: what reads a Cluster's provider objects from the management cluster and
// turns them into status (local.go, packet.go). Every provider of the registry has one (a test
// checks it).
var parts = map[string]func(r *Reconciler) provider{
	providers.LocalName:  func(r *Reconciler) provider { return &localProvider{r: r} },
	providers.PacketName: func(r *Reconciler) provider { return &packetProvider{r: r} },
}

// providerFor picks the provider of a Cluster: a ClusterClass when spec.topology names one
// (clusterclass.go), else the provider of the registry whose datacenter config kind
// spec.datacenterRef names, and the local provider for a kind no provider has (its resolve
// reports the kind).
func (r *Reconciler) providerFor(c *flotillav1.Cluster) provider {
	if c.Spec.Topology != nil {
		return &clusterClassProvider{r: r}
	}
	p, ok := providers.OfDatacenterKind(c.Spec.DatacenterRef.Kind)
	if !ok {
		p = providers.Local
	}
	return parts[p.Name](r)
}
