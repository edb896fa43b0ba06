package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/topology"
)

// The ClusterClass provider's RBAC: the reconciler reads the ClusterClass a Cluster names.
//
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusterclasses,verbs=get;list;watch

// providerCheckInterval is how often a Cluster whose ClusterClass uses a kind no CRD serves looks
// again: no watch reports a CRD being installed.
const providerCheckInterval = 30 * time.Second

// clusterClassProvider is the part of the reconciler for a Cluster of a Cluster API ClusterClass
// (spec.topology), of any Cluster API provider: the Cluster becomes a CAPI Cluster with
// spec.topology (package topology builds it) and nothing else; Cluster API's topology
// controller creates the infrastructure cluster, the control plane and the MachineDeployments
// from the ClusterClass's templates, and deletes them again. The MachineDeployments carry the
// Flotilla labels (topology.Of puts them in their metadata), so the reconciler finds and watches
// them as it does its own; it never deletes one: the topology controller removes those of
// removed worker node groups.
type clusterClassProvider struct {
	r *Reconciler

	// class is the ClusterClass spec.topology.class names; nil when it does not exist.
	class *clusterv1.ClusterClass
	// notServed describes the ClusterClass's templates whose kind no CRD serves, for messages;
	// empty when every one is served.
	notServed []string
}

// observe sets the control plane version the CAPI Cluster's topology asks for.
func (p *clusterClassProvider) observe(_ context.Context, s *scope) error {
	if s.capiCluster != nil {
		s.controlPlaneVersion = s.capiCluster.Spec.Topology.Version
	}
	return nil
}

// resolve reads the ClusterClass, and checks that every template it references is of a kind the
// management cluster serves: a provider that is not installed is reported (ControlPlaneReady
// ProviderNotInstalled), and looked for again every providerCheckInterval.
func (p *clusterClassProvider) resolve(ctx context.Context, s *scope, errs *field.ErrorList) error {
	c := s.cluster
	path := field.NewPath("spec", "topology", "class")
	cc := &clusterv1.ClusterClass{}
	found, err := p.r.get(ctx, ctrlclient.ObjectKey{Namespace: c.Namespace, Name: c.Spec.Topology.Class}, cc)
	if err != nil {
		return err
	}
	if !found {
		*errs = append(*errs, topology.ClassNotFound(path, c))
		return nil
	}
	p.class = cc
	for _, ref := range templateRefs(cc) {
		gv, err := schema.ParseGroupVersion(ref.ref.APIVersion)
		if err != nil {
			continue // the ClusterClass webhook refuses it
		}
		if _, err := p.r.Client.RESTMapper().RESTMapping(gv.WithKind(ref.ref.Kind).GroupKind(), gv.Version); meta.IsNoMatchError(err) {
			p.notServed = append(p.notServed, fmt.Sprintf("%s %s (%s of %s)", ref.ref.Kind, ref.ref.APIVersion, ref.role, ref.usedBy))
		} else if err != nil {
			return fmt.Errorf("looking up %s %s: %w", ref.ref.Kind, ref.ref.APIVersion, err)
		}
	}
	if len(p.notServed) > 0 {
		s.requeueAfter = providerCheckInterval
	}
	return nil
}

// templateRef is one template a ClusterClass references.
type templateRef struct {
	ref clusterv1.ClusterClassTemplateReference
	// role is the provider kind the template is for: infrastructure, control-plane, bootstrap.
	role string
	// usedBy says what of the class uses it: "the cluster", "the control plane", "worker class md".
	usedBy string
}

// templateRefs lists the templates of a ClusterClass.
func templateRefs(cc *clusterv1.ClusterClass) []templateRef {
	refs := []templateRef{
		{cc.Spec.Infrastructure.TemplateRef, "infrastructure", "the cluster"},
		{cc.Spec.ControlPlane.TemplateRef, "control-plane", "the control plane"},
	}
	if cc.Spec.ControlPlane.MachineInfrastructure.TemplateRef.IsDefined() {
		refs = append(refs, templateRef{cc.Spec.ControlPlane.MachineInfrastructure.TemplateRef, "infrastructure", "the control plane's machines"})
	}
	for _, md := range cc.Spec.Workers.MachineDeployments {
		usedBy := fmt.Sprintf("worker class %s", md.Class)
		refs = append(refs,
			templateRef{md.Bootstrap.TemplateRef, "bootstrap", usedBy},
			templateRef{md.Infrastructure.TemplateRef, "infrastructure", usedBy})
	}
	return refs
}

// notServedMessage says which templates no CRD serves and how to install their providers.
func (p *clusterClassProvider) notServedMessage() string {
	return fmt.Sprintf("ClusterClass %s uses %s, which no CRD of this management cluster serves: the provider is not installed. "+
		"Install it the clusterctl way (clusterctl init --infrastructure NAME, --control-plane NAME, --bootstrap NAME); "+
		"Cluster API's in-memory provider (DevCluster, DevMachine) comes with Flotilla's components: "+
		"`flotilla upgrade cluster -f MGMT.yaml` installs them on a management cluster made by an older Flotilla",
		p.class.Name, strings.Join(p.notServed, ", "))
}

// completeCAPICluster gives the CAPI Cluster its topology.
func (p *clusterClassProvider) completeCAPICluster(s *scope, capi *clusterv1.Cluster) {
	capi.Spec.Topology = topology.Of(s.cluster, s.version)
}

// desired: nothing besides the CAPI Cluster; its topology is everything.
func (p *clusterClassProvider) desired(*scope) ([]ctrlclient.Object, error) {
	return nil, nil
}

// obsolete: nothing; Cluster API's topology controller deletes the MachineDeployments of removed
// worker node groups.
func (p *clusterClassProvider) obsolete(*scope) []ctrlclient.Object {
	return nil
}

// clustersOfClass maps a ClusterClass to the Clusters of its namespace that name it, so that a
// class created after its Cluster, or one whose status changes (Cluster API's ClusterClass
// controller reconciled it, its provider was installed), is picked up.
func (r *Reconciler) clustersOfClass(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	clusters := &flotillav1.ClusterList{}
	if err := r.Client.List(ctx, clusters, ctrlclient.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for i := range clusters.Items {
		if t := clusters.Items[i].Spec.Topology; t != nil && t.Class == obj.GetName() {
			requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&clusters.Items[i])})
		}
	}
	return requests
}
