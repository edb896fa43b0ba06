package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
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
// gateProbeInterval and sets flotillav1.EndpointServingAnnotation once it is ready; the cluster
// cache's filter leaves gated Clusters alone until then, and the annotation's write is the event
// that makes it connect, the first time successfully. A local cluster is not gated: its
// LocalCluster reports provisioned only once its API server serves.
//
// For a KubeadmControlPlane, "ready" also means kubeadm init has uploaded kube-system/kubeadm-config
// (read with the Cluster's admin kubeconfig): kubeadm writes it only after kube-apiserver
// answers, and KubeadmControlPlane, which counts the control plane initialized once it reads that
// ConfigMap through the cluster cache, reads it right after the connection. If it read in
// between, it found nothing and looked again only on its next event, or after 20 s.

// RBAC of the endpoint gate (ManagerIdentity): it watches Cluster API Clusters and annotates
// them; it reads a kubeadm cluster's kubeconfig Secret as the cluster cache does (manager.go).
//
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch;patch

// gateProbeInterval is how often a gated Cluster's endpoint is probed. Everything that needs
// the workload cluster waits for the gate, so it is short: a probe is one TLS handshake and one
// unauthenticated GET, and a Cluster is gated only while its first control plane boots (at 1 s
// the gate opened on average half a second after the API server was ready).
const gateProbeInterval = 250 * time.Millisecond

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

func isKubeadm(ref clusterv1.ContractVersionedObjectReference) bool {
	return ref.APIGroup == kubeadmcontrolplanev1.GroupVersion.Group && ref.Kind == "KubeadmControlPlane"
}

// endpointGate is the controller that opens the gate.
type endpointGate struct {
	client ctrlclient.Client
	// probe returns the status with which https://address/readyz answers; 0 for none.
	probe func(ctx context.Context, address string) int
	// kubeadmConfigUploaded reports whether the Cluster's kube-system/kubeadm-config exists.
	kubeadmConfigUploaded func(ctx context.Context, c *clusterv1.Cluster) bool
	// forbiddenSince records when each Cluster's endpoint first answered 403.
	forbiddenSince sync.Map
}

func setupEndpointGate(mgr ctrl.Manager) error {
	g := &endpointGate{client: mgr.GetClient(), probe: readyzStatus}
	g.kubeadmConfigUploaded = func(ctx context.Context, c *clusterv1.Cluster) bool {
		return kubeadmConfigUploaded(ctx, g.client, c)
	}
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
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !gated(c) || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if !g.serves(req.NamespacedName, g.probe(ctx, c.Spec.ControlPlaneEndpoint.String())) {
		return ctrl.Result{RequeueAfter: gateProbeInterval}, nil
	}
	if isKubeadm(c.Spec.ControlPlaneRef) && !g.kubeadmConfigUploaded(ctx, c) {
		return ctrl.Result{RequeueAfter: gateProbeInterval}, nil
	}
	g.forbiddenSince.Delete(req.NamespacedName)
	patch := ctrlclient.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, flotillav1.EndpointServingAnnotation))
	if err := g.client.Patch(ctx, c, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("annotating Cluster %s with %s: %w", req, flotillav1.EndpointServingAnnotation, err)
	}
	ctrl.LoggerFrom(ctx).Info("The control plane endpoint serves; the cluster cache may connect", "endpoint", c.Spec.ControlPlaneEndpoint.String())
	return ctrl.Result{}, nil
}

// forbiddenGrace is how long an endpoint that answers /readyz with 403 is waited for.
const forbiddenGrace = 10 * time.Second

// serves says whether an endpoint whose /readyz answered status (asked without credentials) is
// ready: 200 says so; 401, that it does not let anonymous requests in, so this is as much as can
// be known. A 403 says not yet: anonymous requests may read /readyz once the API server has
// created its default RBAC rules, which it does before it reports ready; a cluster whose rules
// never allow it is let through after forbiddenGrace of 403s.
func (g *endpointGate) serves(cluster types.NamespacedName, status int) bool {
	switch status {
	case http.StatusOK, http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		since, _ := g.forbiddenSince.LoadOrStore(cluster, time.Now())
		return time.Since(since.(time.Time)) >= forbiddenGrace
	default:
		return false
	}
}

// readyzStatus asks https://address/readyz without credentials and returns the status of the
// answer, 0 when there is none. The certificate is not verified: nothing is sent, and nothing of
// the answer is trusted beyond its status.
func readyzStatus(ctx context.Context, address string) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/readyz", nil)
	if err != nil {
		return 0
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a readiness probe; see the doc comment
		DisableKeepAlives: true,
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// kubeadmConfigUploaded reports whether the workload cluster of c has kube-system/kubeadm-config,
// asked with the admin kubeconfig in c's <cluster>-kubeconfig Secret; false when that cannot be
// known yet (no Secret, no answer).
func kubeadmConfigUploaded(ctx context.Context, c ctrlclient.Reader, cluster *clusterv1.Cluster) bool {
	data, err := kubeconfig.FromSecret(ctx, c, ctrlclient.ObjectKeyFromObject(cluster))
	if err != nil {
		return false
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return false
	}
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kubeadm-config", metav1.GetOptions{})
	return err == nil
}
