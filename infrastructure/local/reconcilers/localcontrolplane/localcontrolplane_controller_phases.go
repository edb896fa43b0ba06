package localcontrolplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/secret"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/pki"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// defaultHost is where local control planes serve.
const defaultHost = "127.0.0.1"

// fieldOwner is the server-side apply field manager of the Secrets this reconciler writes.
const fieldOwner = ctrlclient.FieldOwner("flotilla-localcontrolplane")

// scope holds what one reconcile learns about a LocalControlPlane; the status setters turn it
// into status fields and conditions.
type scope struct {
	lcp *controlplanev1.LocalControlPlane
	// cluster owns the LocalControlPlane; nil until CAPI sets the owner reference.
	cluster *clusterv1.Cluster
	// clusterName names the data directory and the Secrets.
	clusterName string

	// conflict is the LocalControlPlane of a same-named Cluster in another namespace that holds
	// the data directory.
	conflict *controlplanev1.LocalControlPlane
	// binariesErr says which binary is missing and how to build it.
	binariesErr error
	// config describes the control plane once endpoint and binaries are known.
	config *controlplane.Config
	// caSecret is the <cluster>-ca Secret as it was before this reconcile; nil when missing.
	caSecret *corev1.Secret
	// processes is what controlplane.Ensure reported.
	processes *controlplane.Status
	// ensureErr is why controlplane.Ensure failed.
	ensureErr error
	// restarted names the processes this reconcile started again: they had stopped, or Ensure
	// replaced them because their version, flags or certificates changed.
	restarted []string
	// secretsErr is why the CA or kubeconfig Secret could not be written.
	secretsErr error
	// secretsWritten is true when both Secrets hold the current PKI.
	secretsWritten bool
	// ready is true when kube-apiserver answered /readyz; version is what /version said.
	ready    bool
	version  string
	readyErr error
}

// initialized reports whether the control plane has served /readyz before.
func (s *scope) initialized() bool {
	return ptr.Deref(s.lcp.Status.Initialization.ControlPlaneInitialized, false)
}

// dir is the control plane's data directory.
func (r *Reconciler) dir(s *scope) string {
	return controlplane.ClusterDir(r.Home, s.clusterName)
}

// reconcileNameConflict finds out whether a same-named Cluster in another namespace holds the
// data directory, in which case this control plane neither starts nor deletes anything.
func (r *Reconciler) reconcileNameConflict(ctx context.Context, s *scope) (ctrl.Result, error) {
	list := &controlplanev1.LocalControlPlaneList{}
	if err := r.Client.List(ctx, list, ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: s.clusterName}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing LocalControlPlanes of clusters named %s: %w", s.clusterName, err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.Namespace != s.lcp.Namespace && holdsDirectoryBefore(other, s.lcp) {
			s.conflict = other
			break
		}
	}
	if s.conflict == nil {
		return ctrl.Result{}, nil
	}
	if reasonOf(s.lcp, controlplanev1.AvailableCondition) != controlplanev1.ClusterNameConflictReason {
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, controlplanev1.ClusterNameConflictReason, "Reconcile",
			"LocalControlPlane %s/%s of another Cluster named %s holds %s; rename this Cluster",
			s.conflict.Namespace, s.conflict.Name, s.clusterName, r.dir(s))
	}
	return ctrl.Result{RequeueAfter: healthyRequeue}, nil
}

// holdsDirectoryBefore reports whether a was created before b (ties broken by namespace), and
// so holds the data directory of their common cluster name.
func holdsDirectoryBefore(a, b *controlplanev1.LocalControlPlane) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace < b.Namespace
}

// ensureEndpoint chooses spec.controlPlaneEndpoint once, a free port on 127.0.0.1, and writes
// it to the spec before anything starts, so the endpoint never changes. It reports whether it
// wrote.
func (r *Reconciler) ensureEndpoint(ctx context.Context, patch *objectpatch.Patch, lcp *controlplanev1.LocalControlPlane) (bool, error) {
	endpoint := lcp.Spec.ControlPlaneEndpoint
	if !lcp.DeletionTimestamp.IsZero() || (endpoint.Host != "" && endpoint.Port != 0) {
		return false, nil
	}
	if endpoint.Host == "" {
		endpoint.Host = defaultHost
	}
	if endpoint.Port == 0 {
		port, err := controlplane.PickPort(endpoint.Host)
		if err != nil {
			return false, fmt.Errorf("choosing a port for kube-apiserver: %w", err)
		}
		endpoint.Port = port
	}
	lcp.Spec.ControlPlaneEndpoint = endpoint
	if err := patch.Write(ctx); err != nil {
		return false, fmt.Errorf("writing spec.controlPlaneEndpoint: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Chose the control plane endpoint", "host", endpoint.Host, "port", endpoint.Port)
	r.recorder.Eventf(lcp, nil, corev1.EventTypeNormal, "EndpointChosen", "Reconcile",
		"kube-apiserver will serve on %s", serverURL(endpoint))
	return true, nil
}

// reconcileBinaries finds the programs of spec.version and describes the control plane.
func (r *Reconciler) reconcileBinaries(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.conflict != nil || s.lcp.Spec.ControlPlaneEndpoint.Port == 0 {
		return ctrl.Result{}, nil
	}
	set, err := binaries.Find(r.BinRoot, s.lcp.Spec.Version)
	if err != nil {
		s.binariesErr = err
		if reasonOf(s.lcp, controlplanev1.AvailableCondition) != controlplanev1.BinariesMissingReason {
			r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, controlplanev1.BinariesMissingReason, "Reconcile", "%v", err)
		}
		return ctrl.Result{RequeueAfter: binariesRequeue}, nil
	}
	s.config = &controlplane.Config{
		Name:                  s.clusterName,
		Dir:                   r.dir(s),
		Binaries:              set,
		Host:                  s.lcp.Spec.ControlPlaneEndpoint.Host,
		APIServerPort:         s.lcp.Spec.ControlPlaneEndpoint.Port,
		ControllerManager:     ptr.Deref(s.lcp.Spec.ControllerManager, true),
		Scheduler:             ptr.Deref(s.lcp.Spec.Scheduler, true),
		Kwok:                  true,
		ServiceClusterIPRange: s.lcp.Spec.ServiceClusterIPRange,
		RealNodes:             r.realNodes(ctx, s.lcp.Spec.RealNodes),
		ManagedBy:             r.ManagementServer,
	}
	return ctrl.Result{}, nil
}

// realNodes turns spec.realNodes into controlplane.RealNodes (nil without real nodes). An
// unparsable network (the webhook refuses one) is chosen again. The image mirror whose port the
// node network forwards is the nodes' (realnode.MirrorOf): when the management cluster's
// mirror is unusable, the LocalMachines say why, and spec.imageMirror's port stays forwarded.
func (r *Reconciler) realNodes(ctx context.Context, spec *controlplanev1.RealNodesSpec) *controlplane.RealNodes {
	if spec == nil {
		return nil
	}
	network, _ := netip.ParsePrefix(spec.Network)
	nodes := &controlplane.RealNodes{Network: network, PodCIDR: spec.PodCIDR, Mirror: spec.ImageMirror}
	mirror, err := realnode.MirrorOf(ctx, r.APIReader, spec.ImageMirror)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Forwarding spec.realNodes.imageMirror: the image mirror of real nodes is unusable", "reason", err.Error())
		return nodes
	}
	nodes.Mirror, _, _ = registryconn.SplitRegistry(mirror.Registry)
	return nodes
}

// reconcileProcesses makes every process of the control plane run: controlplane.Ensure adopts
// running ones and starts missing ones. The CA in the <cluster>-ca Secret, when there is one, is
// the cluster's CA: Ensure restores the PKI on disk from it.
func (r *Reconciler) reconcileProcesses(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.config == nil {
		return ctrl.Result{}, nil
	}
	caSecret := &corev1.Secret{}
	err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: s.lcp.Namespace, Name: secret.Name(s.clusterName, secret.ClusterCA)}, caSecret)
	switch {
	case err == nil:
		s.caSecret = caSecret
		ca, err := keyPairFromSecret(caSecret)
		if err != nil {
			// Not offered to Ensure; the Secret is rewritten with the CA the control plane uses.
			ctrl.LoggerFrom(ctx).Info("Ignoring an unreadable CA Secret", "Secret", caSecret.Name, "reason", err.Error())
		} else {
			s.config.CA = ca
		}
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("getting the CA Secret: %w", err)
	}

	status, err := controlplane.Ensure(ctx, *s.config)
	if err != nil {
		s.ensureErr = err
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, "StartFailed", "Start", "Starting the control plane failed: %v", err)
		return ctrl.Result{}, fmt.Errorf("starting the control plane: %w", err)
	}
	s.processes = status
	r.recordProcessEvents(ctx, s)
	for _, p := range status.Processes {
		if p.PID == 0 {
			// Waiting out a back-off: look again when it ends, to report the start.
			return ctrl.Result{RequeueAfter: max(time.Until(p.History.NextStart), startingRequeue)}, nil
		}
	}
	return ctrl.Result{}, nil
}

// recordProcessEvents reports what happened to the processes since this reconciler last looked:
// started ones, ones started again after they exited (by the supervisor of the home, or by
// Ensure), ones that exited and wait out a back-off, and adopted ones (found running after a
// manager start, the manager itself included when the supervisor restarted it).
func (r *Reconciler) recordProcessEvents(ctx context.Context, s *scope) {
	previous := r.remember(ctrlclient.ObjectKeyFromObject(s.lcp), s.processes.Processes)
	var started, restarted, adopted, exited []string
	for _, p := range s.processes.Processes {
		before, ranBefore := previous[p.Name]
		if p.PID == 0 {
			if !p.History.ExitedAt.Equal(before.exitedAt) {
				exited = append(exited, describeExit(p))
			}
			continue
		}
		if ranBefore && before.pid == p.PID {
			continue
		}
		description := p.Name + " (pid " + strconv.Itoa(p.PID) + ")"
		switch {
		case ranBefore || (previous == nil && r.recentlyRestarted(p)):
			restarted = append(restarted, describeRestart(p))
		case p.Adopted:
			adopted = append(adopted, description)
		case previous == nil && s.initialized():
			restarted = append(restarted, description)
		default:
			started = append(started, description)
		}
	}
	log := ctrl.LoggerFrom(ctx)
	if len(started) > 0 {
		log.Info("Started control plane processes", "processes", started)
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeNormal, "Started", "Start", "Started %s", strings.Join(started, ", "))
	}
	if len(exited) > 0 {
		log.Info("Control plane processes exited and wait out their back-off", "processes", exited)
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, "ProcessExited", "Supervise", "%s", strings.Join(exited, "; "))
	}
	if len(restarted) > 0 {
		s.restarted = restarted
		if upgrading := s.lcp.Status.Version != "" && s.lcp.Status.Version != s.lcp.Spec.Version; upgrading {
			log.Info("Restarted control plane processes on a new version", "processes", restarted, "version", s.lcp.Spec.Version)
			r.recorder.Eventf(s.lcp, nil, corev1.EventTypeNormal, "Upgrading", "Start",
				"Restarted %s on Kubernetes %s", strings.Join(restarted, ", "), s.lcp.Spec.Version)
		} else {
			log.Info("Restarted control plane processes", "processes", restarted)
			r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, "ProcessRestarted", "Start",
				"Restarted %s: it had stopped, or its configuration changed", strings.Join(restarted, ", "))
		}
	}
	if len(adopted) > 0 {
		log.Info("Adopted running control plane processes", "processes", adopted)
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeNormal, "Adopted", "Start", "Adopted running %s", strings.Join(adopted, ", "))
	}
}

// recentlyRestarted reports whether p was started again after an exit shortly before this
// reconciler started, or since: a restart that happened while no manager watched (the manager
// itself, restarted by the supervisor).
func (r *Reconciler) recentlyRestarted(p controlplane.ProcessStatus) bool {
	return p.History.Restarts > 0 && p.Started.After(r.started.Add(-restartedRecently))
}

// restartedRecently is how long before a manager's start a restart counts as news to it.
const restartedRecently = time.Minute

// describeRestart says which process runs again, how often it was restarted, and how it ended.
func describeRestart(p controlplane.ProcessStatus) string {
	description := fmt.Sprintf("%s (pid %d", p.Name, p.PID)
	if p.History.Restarts > 0 {
		description += fmt.Sprintf(", restart %d after it %s", p.History.Restarts, p.History.Ended())
	}
	return description + ")"
}

// describeExit says how a process ended and when it starts again.
func describeExit(p controlplane.ProcessStatus) string {
	h := p.History
	if h.PortInUse != "" {
		return fmt.Sprintf("%s cannot start: %s is in use by another program; trying again in %s", p.Name, h.PortInUse, untilNext(h))
	}
	return fmt.Sprintf("%s %s, %d time(s) in a row within %s of its start; starting it again in %s (see %s)",
		p.Name, h.Ended(), h.Failures, process.StableAfter, untilNext(h), p.Log)
}

// untilNext renders the wait before the next start.
func untilNext(h process.History) string {
	return max(time.Until(h.NextStart), 0).Round(time.Second).String()
}

// reconcileSecrets writes the <cluster>-ca and <cluster>-kubeconfig Secrets.
func (r *Reconciler) reconcileSecrets(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.processes == nil {
		return ctrl.Result{}, nil
	}
	if err := r.reconcileCASecret(ctx, s); err != nil {
		return ctrl.Result{}, r.secretsFailed(s, err)
	}
	if err := r.reconcileKubeconfigSecret(ctx, s); err != nil {
		return ctrl.Result{}, r.secretsFailed(s, err)
	}
	s.secretsWritten = true
	return ctrl.Result{}, nil
}

// secretsFailed records a failure to write a Secret.
func (r *Reconciler) secretsFailed(s *scope, err error) error {
	s.secretsErr = err
	r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, "SecretsFailed", "WriteSecrets", "%v", err)
	return err
}

// reconcileCASecret applies the <cluster>-ca Secret when it is missing or differs from the CA
// the control plane runs with.
func (r *Reconciler) reconcileCASecret(ctx context.Context, s *scope) error {
	desired := caSecret(s.lcp, s.clusterName, s.processes.CA)
	if s.caSecret != nil && secretUpToDate(s.caSecret, desired) {
		return nil
	}
	if err := r.Client.Apply(ctx, secretApplyConfiguration(desired), fieldOwner, ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("writing Secret %s: %w", desired.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the CA Secret", "Secret", desired.Name)
	return nil
}

// reconcileKubeconfigSecret issues the admin kubeconfig into <cluster>-kubeconfig when it is
// missing, points at another endpoint or CA, or its client certificate is due for renewal. A
// kubeconfig Secret that is not of type cluster.x-k8s.io/secret was provided by a user and is
// left alone, as CAPI's control plane providers do.
func (r *Reconciler) reconcileKubeconfigSecret(ctx context.Context, s *scope) error {
	server := serverURL(s.lcp.Spec.ControlPlaneEndpoint)
	existing := &corev1.Secret{}
	err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: s.lcp.Namespace, Name: secret.Name(s.clusterName, secret.Kubeconfig)}, existing)
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return fmt.Errorf("getting the kubeconfig Secret: %w", err)
	case existing.Type != clusterv1.ClusterSecretType:
		return nil
	}
	if existing != nil {
		current, err := kubeconfigCurrent(existing, s.clusterName, server, s.processes.CA, time.Now())
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("Reissuing an unreadable kubeconfig Secret", "reason", err.Error())
		}
		if current && controlledBy(existing, s.lcp) {
			return nil
		}
	}

	data, err := adminKubeconfig(s.clusterName, server, s.processes.CA)
	if err != nil {
		return err
	}
	desired := kubeconfigSecret(s.lcp, s.clusterName, data)
	if err := r.Client.Apply(ctx, secretApplyConfiguration(desired), fieldOwner, ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("writing Secret %s: %w", desired.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the kubeconfig Secret", "Secret", desired.Name)
	return nil
}

// reconcileReadiness asks kube-apiserver for /readyz and /version without waiting for it.
func (r *Reconciler) reconcileReadiness(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.processes == nil {
		return ctrl.Result{}, nil
	}
	probeCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	version, err := controlplane.Ready(probeCtx, *s.config)
	if err != nil {
		s.readyErr = err
		ctrl.LoggerFrom(ctx).V(4).Info("kube-apiserver is not ready yet", "reason", err.Error())
		return ctrl.Result{RequeueAfter: startingRequeue}, nil
	}
	s.ready, s.version = true, version
	if !s.initialized() {
		elapsed := time.Since(s.lcp.CreationTimestamp.Time).Round(100 * time.Millisecond)
		ctrl.LoggerFrom(ctx).Info("Control plane is available", "version", version, "sinceCreation", elapsed.String())
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeNormal, "Available", "Reconcile",
			"kube-apiserver %s answers on %s, %s after the LocalControlPlane was created",
			version, serverURL(s.lcp.Spec.ControlPlaneEndpoint), elapsed)
	}
	return ctrl.Result{RequeueAfter: healthyRequeue}, nil
}

// reconcileDelete stops every process of the control plane and removes its data directory,
// then the finalizer. A control plane in conflict leaves the directory of the other one alone,
// and one that clusterctl move deletes after copying it elsewhere leaves its processes to the
// copy, which adopts them.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(s.lcp, controlplanev1.LocalControlPlaneFinalizer) {
		return ctrl.Result{}, nil
	}
	if _, moved := s.lcp.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		log.Info("Deleted by clusterctl move, leaving the processes to the moved copy")
		r.forget(ctrlclient.ObjectKeyFromObject(s.lcp))
		controllerutil.RemoveFinalizer(s.lcp, controlplanev1.LocalControlPlaneFinalizer)
		return ctrl.Result{}, nil
	}
	if s.clusterName != "" {
		if _, err := r.reconcileNameConflict(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.clusterName != "" && s.conflict == nil {
		dir := r.dir(s)
		if err := controlplane.Delete(ctx, dir); err != nil {
			r.recorder.Eventf(s.lcp, nil, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Stopping the control plane failed: %v", err)
			return ctrl.Result{}, fmt.Errorf("deleting the control plane in %s: %w", dir, err)
		}
		log.Info("Stopped the control plane and removed its data", "dir", dir)
		r.recorder.Eventf(s.lcp, nil, corev1.EventTypeNormal, "Deleted", "Delete", "Stopped every process and removed %s", dir)
	}
	r.forget(ctrlclient.ObjectKeyFromObject(s.lcp))
	controllerutil.RemoveFinalizer(s.lcp, controlplanev1.LocalControlPlaneFinalizer)
	return ctrl.Result{}, nil
}

// serverURL is the https URL of an endpoint.
func serverURL(endpoint controlplanev1.APIEndpoint) string {
	return "https://" + net.JoinHostPort(endpoint.Host, strconv.Itoa(int(endpoint.Port)))
}

// keyPairFromSecret reads a CA from a Secret in CAPI's tls.crt/tls.key layout.
func keyPairFromSecret(s *corev1.Secret) (*pki.KeyPair, error) {
	cert, key := s.Data[secret.TLSCrtDataName], s.Data[secret.TLSKeyDataName]
	if len(cert) == 0 || len(key) == 0 {
		return nil, fmt.Errorf("secret %s lacks %s or %s", s.Name, secret.TLSCrtDataName, secret.TLSKeyDataName)
	}
	return pki.ParseKeyPair(cert, key)
}
