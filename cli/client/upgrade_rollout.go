package client

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// waitRollout waits until the upgraded workload cluster runs its spec (see waitForRollout). Should
// the management cluster's manager stop meanwhile, the supervisor starts it again and the
// command's watch (ensureManagerOf) says so.
func (r *upgradeRun) waitRollout(ctx context.Context) error {
	return r.c.waitForRollout(ctx, rollout{
		kc: r.kc, key: r.clusterKey(), version: r.Plan.Version, kubeconfig: r.opts.Kubeconfig,
	})
}

// rollout is what waitForRollout watches: the Cluster key in the cluster behind kc (whose
// kubeconfig the messages name), rolling out to the full version.
type rollout struct {
	kc         ctrlclient.Client
	key        ctrlclient.ObjectKey
	version    string
	kubeconfig string
}

// waitForRollout waits until the cluster runs its spec: the control plane reports the spec's
// version, every Machine is at it and Ready, none is left over, and the Cluster is Ready for its
// current generation. It prints the progress when it changes, and fails early when the
// controllers report something waiting cannot fix (an invalid spec, missing binaries).
func (c *Client) waitForRollout(ctx context.Context, ro rollout) error {
	key := ro.key
	start := time.Now()
	var last rolloutStatus
	err := poll(ctx, readyPollInterval, c.WaitTimeout, func(ctx context.Context) (bool, error) {
		st, err := observeRollout(ctx, ro.kc, key, ro.version)
		if err != nil {
			return false, nil //nolint:nilerr // the API may blink; keep asking until the timeout
		}
		if line := st.summary(); line != last.summary() {
			fmt.Fprintf(c.Out, "  %6s  %s\n", formatElapsed(time.Since(start)), line)
		}
		last = st
		if err := st.failure(); err != nil {
			return false, err
		}
		return st.done(), nil
	}, func() error {
		return fmt.Errorf("cluster %q has not finished rolling out after %s (last: %s); the controller carries on: see `flotilla describe cluster %s --kubeconfig %s`, and run the same command again to wait for it",
			key.Name, c.WaitTimeout, last.summary(), key.Name, ro.kubeconfig)
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted while cluster %q rolls out (last: %s); its controller carries on, and the same command waits for it again: %w",
			key.Name, last.summary(), err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "  rolled out in %s\n", formatElapsed(time.Since(start)))
	return nil
}

// observeRollout reads what waitForRollout judges: the Flotilla Cluster, its Machines, and its
// LocalControlPlane when it has one (a local cluster), which says when binaries are missing.
func observeRollout(ctx context.Context, kc ctrlclient.Client, key ctrlclient.ObjectKey, version string) (rolloutStatus, error) {
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, key, fc); err != nil {
		return rolloutStatus{}, err
	}
	lcp := &controlplanev1.LocalControlPlane{}
	if err := kc.Get(ctx, key, lcp); err != nil {
		if !apierrors.IsNotFound(err) {
			return rolloutStatus{}, err
		}
		lcp = nil
	}
	machines := &clusterv1.MachineList{}
	if err := kc.List(ctx, machines, ctrlclient.InNamespace(key.Namespace), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: key.Name}); err != nil {
		return rolloutStatus{}, err
	}
	return newRolloutStatus(version, fc, lcp, machines.Items), nil
}

// formatElapsed rounds d to a tenth of a second under a minute, to seconds above.
func formatElapsed(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// rolloutStatus is how far a cluster is from running its spec, as waitRollout reports it.
type rolloutStatus struct {
	// version is the full version the cluster is to run.
	version string
	// observed: the Cluster's controller has seen its current generation; ready: and it is
	// Ready; readyReason and readyMessage say why not.
	observed, ready           bool
	readyReason, readyMessage string
	// controlPlane is the version the control plane runs (the Cluster's
	// status.kubernetesVersion, for every provider), "" before it reports one; available
	// whether it is ready (ControlPlaneReady), unavailableReason and unavailableMessage why not.
	controlPlane                          string
	available                             bool
	unavailableReason, unavailableMessage string
	// binariesMissing is the message of a local control plane that lacks the binaries of the
	// version; empty otherwise.
	binariesMissing string
	// desired is the number of workers the spec asks for; machines counts the worker Machines
	// (control plane Machines are the control plane's) that are not being deleted, atVersion and
	// readyMachines those of them that run version and are Ready; deleting those being deleted.
	desired                                      int32
	machines, atVersion, readyMachines, deleting int
}

// newRolloutStatus judges the objects observeRollout read; lcp is nil when missing.
func newRolloutStatus(version string, fc *flotillav1.Cluster, lcp *controlplanev1.LocalControlPlane, machines []clusterv1.Machine) rolloutStatus {
	st := rolloutStatus{version: version, desired: desiredWorkers(fc)}
	st.observed = fc.Status.ObservedGeneration >= fc.Generation
	if ready := meta.FindStatusCondition(fc.Status.Conditions, flotillav1.ReadyCondition); ready != nil {
		st.ready = ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= fc.Generation
		st.readyReason, st.readyMessage = ready.Reason, ready.Message
	}
	st.controlPlane = fc.Status.KubernetesVersion
	if cp := meta.FindStatusCondition(fc.Status.Conditions, flotillav1.ControlPlaneReadyCondition); cp != nil {
		st.available = cp.Status == metav1.ConditionTrue
		st.unavailableReason, st.unavailableMessage = cp.Reason, cp.Message
	}
	if lcp != nil {
		if available := meta.FindStatusCondition(lcp.Status.Conditions, controlplanev1.AvailableCondition); available != nil && available.Reason == controlplanev1.BinariesMissingReason {
			st.binariesMissing = available.Message
		}
	}
	for i := range machines {
		m := &machines[i]
		if _, controlPlane := m.Labels[clusterv1.MachineControlPlaneLabel]; controlPlane {
			continue
		}
		if !m.DeletionTimestamp.IsZero() {
			st.deleting++
			continue
		}
		st.machines++
		if kubeversion.Equal(m.Spec.Version, version) {
			st.atVersion++
		}
		if meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineReadyCondition) {
			st.readyMachines++
		}
	}
	return st
}

// done is true when the control plane serves the version, exactly the desired number of
// Machines run it and are Ready with none left to delete, and the Cluster is Ready for its
// current generation.
func (s rolloutStatus) done() bool {
	return s.observed && s.ready &&
		kubeversion.Equal(s.controlPlane, s.version) && s.available &&
		s.machines == int(s.desired) && s.atVersion == s.machines && s.readyMachines == s.machines && s.deleting == 0
}

// failure returns an error for what waiting cannot fix: the controller finds the spec invalid,
// or the control plane's binaries are missing.
func (s rolloutStatus) failure() error {
	switch {
	case s.observed && s.readyReason == flotillav1.InvalidSpecReason:
		return fmt.Errorf("the cluster controller finds the spec invalid: %s", s.readyMessage)
	case s.binariesMissing != "":
		return fmt.Errorf("the control plane cannot start %s: %s", s.version, s.binariesMissing)
	}
	return nil
}

// summary renders the status on one line, such as
// "control plane v1.36.3 · workers: 4 machines (want 3), 2 at v1.36.3, 3 ready, 1 deleting · not Ready (Upgrading)".
func (s rolloutStatus) summary() string {
	var cp string
	switch {
	case s.controlPlane == "":
		cp = "control plane starting"
	case !kubeversion.Equal(s.controlPlane, s.version):
		cp = fmt.Sprintf("control plane %s → %s", s.controlPlane, s.version)
	default:
		cp = "control plane " + s.controlPlane
	}
	if s.controlPlane != "" && !s.available {
		cp += fmt.Sprintf(" (not available: %s)", s.unavailableReason)
	}
	workers := fmt.Sprintf("workers: %d machines", s.machines)
	if s.machines != int(s.desired) {
		workers += fmt.Sprintf(" (want %d)", s.desired)
	}
	workers += fmt.Sprintf(", %d at %s, %d ready", s.atVersion, s.version, s.readyMachines)
	if s.deleting > 0 {
		workers += fmt.Sprintf(", %d deleting", s.deleting)
	}
	cluster := "Ready"
	if !s.ready {
		cluster = "not Ready"
		if s.readyReason != "" {
			cluster += " (" + s.readyReason + ")"
		}
	}
	return cp + " · " + workers + " · " + cluster
}
