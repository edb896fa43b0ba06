package localmachine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/secret"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// realNodeRequeue is how often a real node is looked at while it runs: its processes are
// started again when they exit (package process's restart policy), and the routes to the Pod
// ranges of the cluster's other nodes follow the Nodes.
const realNodeRequeue = 10 * time.Second

// fieldOwner is the server-side apply field manager of what the reconciler applies in
// workload clusters.
const fieldOwner = ctrlclient.FieldOwner("flotilla-localmachine")

// realNodeFacts is what a reconcile learns about a real node.
type realNodeFacts struct {
	// status is what realnode.Ensure reported.
	status *realnode.Status
	// reason and err say why the node does not run (a condition reason of infrav1).
	reason string
	err    error
}

// nodeDir is the directory of the real node of s: <home>/clusters/<cluster>/nodes/<machine>.
func (r *Reconciler) nodeDir(s *scope) string {
	return filepath.Join(realnode.NodesDir(controlplane.ClusterDir(r.Home, s.cluster.Name)), s.machine.Name)
}

// reconcileRealNode makes the real node of s run and join its cluster: it needs the cluster's
// node network (LocalControlPlane status) and CA, the node programs of the Machine's version and
// the host's runc and iptables. Before kubelet has joined, the cluster gets what real nodes need
// (realnode.ClusterObjects) and a bootstrap token; once its Node is there, the token goes and
// the Node gets the labels kubelet may not set.
func (r *Reconciler) reconcileRealNode(ctx context.Context, remote ctrlclient.Client, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	facts := &realNodeFacts{}
	s.real = facts
	cfg, err := r.realNodeConfig(ctx, s, facts)
	if err != nil || cfg == nil {
		return ctrl.Result{RequeueAfter: realNodeRequeue}, err
	}
	if realnode.NeedsBootstrap(cfg.Dir) {
		if err := r.prepareJoin(ctx, remote, s, cfg); err != nil {
			facts.reason, facts.err = infrav1.NodeStartFailedReason, err
			return ctrl.Result{}, err
		}
	}
	status, err := realnode.Ensure(ctx, *cfg)
	if err != nil {
		facts.reason, facts.err = infrav1.NodeStartFailedReason, err
		if errors.Is(err, realnode.ErrPrerequisite) {
			facts.reason = infrav1.PrerequisiteMissingReason
		}
		r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeStartFailed", "StartNode", "Starting real node %s failed: %v", s.machine.Name, err)
		return ctrl.Result{RequeueAfter: realNodeRequeue}, nil
	}
	facts.status = status
	for _, p := range status.Processes {
		if p.Started {
			log.Info("Started a process of the real node", "process", p.Name, "pid", p.PID, "restarts", p.Restarts)
			if p.Restarts > 0 {
				r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeProcessRestarted", "RestartProcess",
					"%s of real node %s had exited and was started again (%d restarts)", p.Name, s.machine.Name, p.Restarts)
			}
		}
	}
	if !status.Bootstrapped {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err := r.observeRealNode(ctx, remote, s, cfg); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: realNodeRequeue}, nil
}

// realNodeConfig gathers the Config of the real node of s, or records in facts what it waits
// for and returns nil.
func (r *Reconciler) realNodeConfig(ctx context.Context, s *scope, facts *realNodeFacts) (*realnode.Config, error) {
	if err := realnode.Prerequisites(); err != nil {
		facts.reason, facts.err = infrav1.PrerequisiteMissingReason, err
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	lcp := &controlplanev1.LocalControlPlane{}
	key := ctrlclient.ObjectKey{Namespace: s.cluster.Namespace, Name: s.cluster.Spec.ControlPlaneRef.Name}
	if err := r.Client.Get(ctx, key, lcp); err != nil {
		return nil, fmt.Errorf("getting LocalControlPlane %s: %w", key.Name, err)
	}
	network, err := netip.ParsePrefix(lcp.Status.NodeNetwork)
	if lcp.Spec.RealNodes == nil || err != nil {
		facts.reason = infrav1.WaitingForNodeNetworkReason
		facts.err = fmt.Errorf("waiting for LocalControlPlane %s to set up the cluster's node network", lcp.Name)
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	set, err := binaries.Find(r.BinRoot, s.machine.Spec.Version)
	if err == nil {
		err = set.Check(binaries.NodeNames...)
	}
	if err != nil {
		facts.reason, facts.err = infrav1.BinariesMissingReason, fmt.Errorf("%w --nodes", err)
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	ca := &corev1.Secret{}
	if err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: s.cluster.Namespace, Name: secret.Name(s.cluster.Name, secret.ClusterCA)}, ca); err != nil {
		return nil, fmt.Errorf("getting the cluster CA: %w", err)
	}
	mirror, err := realnode.MirrorOf(ctx, r.APIReader, lcp.Spec.RealNodes.ImageMirror)
	if err != nil {
		facts.reason, facts.err = infrav1.ImageMirrorUnusableReason, err
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	record, err := ociimage.ReadRecord(ociimage.RecordPath(r.Home))
	if err != nil {
		facts.reason, facts.err = infrav1.ImageMirrorUnusableReason, err
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	images, err := realnode.PinnedImages(record)
	if err != nil {
		facts.reason, facts.err = infrav1.ImageMirrorUnusableReason, err
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	dns, err := realnode.DNSServiceIP(lcp.Spec.ServiceClusterIPRange)
	if err != nil {
		facts.reason, facts.err = infrav1.NodeStartFailedReason, err
		return nil, nil //nolint:nilerr // recorded in facts: a condition, not a reconcile error
	}
	dir := r.nodeDir(s)
	return &realnode.Config{
		Name:           s.machine.Name,
		Dir:            dir,
		Binaries:       set,
		Network:        network,
		APIServerPort:  lcp.Spec.ControlPlaneEndpoint.Port,
		Mirror:         mirror,
		Images:         images,
		CACert:         ca.Data[secret.TLSCrtDataName],
		BootstrapToken: realnode.BootstrapToken(dir),
		ProviderID:     ProviderID(s.machine),
		Labels:         realNodeKubeletLabels(desiredRealNode(s.machine, s.localMachine)),
		PodCIDR:        lcp.Spec.RealNodes.PodCIDR,
		ClusterDNS:     dns.String(),
	}, nil
}

// prepareJoin applies what the cluster needs for real nodes and makes sure cfg has a bootstrap
// token that the cluster knows.
func (r *Reconciler) prepareJoin(ctx context.Context, remote ctrlclient.Client, s *scope, cfg *realnode.Config) error {
	dns, err := netip.ParseAddr(cfg.ClusterDNS)
	if err != nil {
		return err
	}
	for _, obj := range realnode.ClusterObjects(dns, cfg.Images) {
		if err := apply(ctx, remote, obj); err != nil {
			return err
		}
	}
	if cfg.BootstrapToken == "" {
		cfg.BootstrapToken = realnode.NewBootstrapToken()
	}
	token, err := realnode.BootstrapTokenSecret(cfg.BootstrapToken, s.machine.Name, time.Now().Add(realnode.BootstrapTokenTTL))
	if err != nil {
		return err
	}
	uncached, err := r.ClusterCache.GetUncachedClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return fmt.Errorf("getting a client for the workload cluster: %w", err)
	}
	existing := &corev1.Secret{}
	err = uncached.Get(ctx, ctrlclient.ObjectKeyFromObject(token), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := uncached.Create(ctx, token); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the bootstrap token of node %s: %w", s.machine.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("getting the bootstrap token of node %s: %w", s.machine.Name, err)
	}
	if expires, err := time.Parse(time.RFC3339, string(existing.Data["expiration"])); err == nil && time.Until(expires) < time.Minute {
		// About to expire while the node has not joined: a new token.
		cfg.BootstrapToken = realnode.NewBootstrapToken()
		return r.prepareJoin(ctx, remote, s, cfg)
	}
	return nil
}

// observeRealNode finds the Node kubelet registered, gives it the labels and annotations kubelet
// may not set, removes the bootstrap token it no longer needs, and routes the Pod ranges of the
// cluster's other real nodes in its namespace.
func (r *Reconciler) observeRealNode(ctx context.Context, remote ctrlclient.Client, s *scope, cfg *realnode.Config) error {
	node := &corev1.Node{}
	err := remote.Get(ctx, ctrlclient.ObjectKey{Name: s.machine.Name}, node)
	switch {
	case apierrors.IsNotFound(err):
		return nil // kubelet registers it; its creation brings us back
	case err != nil:
		s.nodeErr = err
		return fmt.Errorf("getting Node %s: %w", s.machine.Name, err)
	}
	desired := desiredRealNode(s.machine, s.localMachine)
	if err := patchMissingMetadata(ctx, remote, node, desired); err != nil {
		s.nodeErr = err
		return err
	}
	s.node = node
	if err := r.deleteBootstrapTokens(ctx, s); err != nil {
		return err
	}
	return r.routePods(ctx, remote, cfg)
}

// deleteBootstrapTokens deletes the bootstrap tokens made for the node of s (labelled
// realnode.TokenNodeLabel), which it no longer needs once it has joined. Secrets are read
// without ClusterCache's cache, which would otherwise hold every Secret of the workload cluster.
func (r *Reconciler) deleteBootstrapTokens(ctx context.Context, s *scope) error {
	uncached, err := r.ClusterCache.GetUncachedClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return fmt.Errorf("getting a client for the workload cluster: %w", err)
	}
	tokens := &corev1.SecretList{}
	if err := uncached.List(ctx, tokens, ctrlclient.InNamespace(metav1.NamespaceSystem), ctrlclient.MatchingLabels{realnode.TokenNodeLabel: s.machine.Name}); err != nil {
		return fmt.Errorf("listing the bootstrap tokens of node %s: %w", s.machine.Name, err)
	}
	for i := range tokens.Items {
		if err := uncached.Delete(ctx, &tokens.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting bootstrap token %s: %w", tokens.Items[i].Name, err)
		}
	}
	return nil
}

// routePods routes, in the node's namespace, the Pod range of each other real node of the
// cluster via that node's address.
func (r *Reconciler) routePods(ctx context.Context, remote ctrlclient.Client, cfg *realnode.Config) error {
	nodes := &corev1.NodeList{}
	if err := remote.List(ctx, nodes, ctrlclient.MatchingLabels{infrav1.SimulatedNodeLabel: "false"}); err != nil {
		return fmt.Errorf("listing the real nodes: %w", err)
	}
	var routes []nodenet.PodRoute
	for _, n := range nodes.Items {
		if n.Name == cfg.Name {
			continue
		}
		pods, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil {
			continue // not given a range yet
		}
		for _, a := range n.Status.Addresses {
			if addr, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP && cfg.Network.Contains(addr) {
				routes = append(routes, nodenet.PodRoute{PodCIDR: pods, Via: addr})
			}
		}
	}
	if err := realnode.SetPodRoutes(cfg.Dir, routes); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Routed the Pod ranges of the other real nodes", "routes", len(routes))
	return nil
}

// deleteRealNode removes the real node of s from this host, whatever the state of its cluster.
func (r *Reconciler) deleteRealNode(ctx context.Context, s *scope) error {
	if s.machine == nil || s.cluster == nil {
		return nil
	}
	if err := realnode.Delete(ctx, r.nodeDir(s)); err != nil {
		r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeDeleteFailed", "DeleteNode", "Deleting real node %s failed: %v", s.machine.Name, err)
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the real node", "Node", klog.KRef("", s.machine.Name))
	return nil
}

// patchMissingMetadata adds to node the labels and annotations of desired it lacks.
func patchMissingMetadata(ctx context.Context, remote ctrlclient.Client, node, desired *corev1.Node) error {
	labels, annotations := missingMetadata(node, desired)
	if labels == nil && annotations == nil {
		return nil
	}
	original := node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	for key, value := range labels {
		node.Labels[key] = value
	}
	for key, value := range annotations {
		node.Annotations[key] = value
	}
	if err := remote.Patch(ctx, node, ctrlclient.MergeFrom(original)); err != nil {
		return fmt.Errorf("patching the labels of Node %s: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Restored the labels and annotations of the Node")
	return nil
}

// apply applies obj with server-side apply.
func apply(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}), fieldOwner, ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// nodeKind says in words what the Node of lm is.
func nodeKind(lm *infrav1.LocalMachine) string {
	if lm.Spec.Node == infrav1.RealNode {
		return "real"
	}
	return "simulated"
}
