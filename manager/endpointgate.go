package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// The endpoint gate keeps Cluster API's cluster cache from connecting to a workload cluster
// before its API server serves.
//
// The cluster cache connects as soon as a Cluster's infrastructure is provisioned. For machines
// that boot their control plane (Packet's kubeadm devices) that is before any machine exists:
// the connection fails, and the cluster cache tries again only after a fixed 30 s, which holds
// back everything that needs the workload cluster (Cluster API learning that kubeadm init is
// done, and so the workers' join data). The gate probes the endpoint of such a Cluster every
// gateProbeInterval and sets flotillav1.EndpointServingAnnotation once it serves; the cluster
// cache's filter leaves gated Clusters alone until then, and the annotation's write is the event
// that makes it connect, the first time successfully. A local cluster is not gated: its
// LocalCluster reports provisioned only once its API server serves.

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch;patch

// gateProbeInterval is how often a gated Cluster's endpoint is probed.
const gateProbeInterval = time.Second

// gated reports whether the cluster cache must leave c alone for now: its infrastructure is
// provisioned and its endpoint known, but nothing says its API server serves yet.
func gated(c *clusterv1.Cluster) bool {
	_, serving := c.Annotations[flotillav1.EndpointServingAnnotation]
	return !serving &&
		!isLocal(c.Spec.InfrastructureRef) &&
		ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) &&
		!ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) &&
		c.Spec.ControlPlaneEndpoint.IsValid()
}

func isLocal(ref clusterv1.ContractVersionedObjectReference) bool {
	return ref.APIGroup == infrav1.GroupVersion.Group && ref.Kind == "LocalCluster"
}

// endpointGate is the controller that opens the gate.
type endpointGate struct {
	client client.Client
	// probe reports whether the API server at https://address serves.
	probe func(ctx context.Context, address string) bool
}

func setupEndpointGate(mgr ctrl.Manager) error {
	g := &endpointGate{client: mgr.GetClient(), probe: serves}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("endpoint-gate").
		For(&clusterv1.Cluster{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(g)
	if err != nil {
		return fmt.Errorf("setting up the endpoint gate: %w", err)
	}
	return nil
}

func (g *endpointGate) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &clusterv1.Cluster{}
	if err := g.client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gated(c) || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if !g.probe(ctx, c.Spec.ControlPlaneEndpoint.String()) {
		return ctrl.Result{RequeueAfter: gateProbeInterval}, nil
	}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, flotillav1.EndpointServingAnnotation))
	if err := g.client.Patch(ctx, c, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("annotating Cluster %s with %s: %w", req, flotillav1.EndpointServingAnnotation, err)
	}
	ctrl.LoggerFrom(ctx).Info("The control plane endpoint serves; the cluster cache may connect", "endpoint", c.Spec.ControlPlaneEndpoint.String())
	return ctrl.Result{}, nil
}

// serves asks https://address/readyz without credentials: 200, or a refusal by authentication
// or authorization (401, 403), says the API server's handler chain is up. The certificate is not
// verified: nothing is sent, and nothing of the answer is trusted beyond its status.
func serves(ctx context.Context, address string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/readyz", nil)
	if err != nil {
		return false
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a reachability probe; see the doc comment
		DisableKeepAlives: true,
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden:
		return true
	default:
		return false
	}
}
