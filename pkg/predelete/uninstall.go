package predelete

import (
	"fmt"
	"time"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// DefaultUninstallTimeout is Uninstall.Timeout when none is set: how long after its cluster's
// teardown began a release with uninstallOnClusterDelete Ensure is tried before it is given up.
const DefaultUninstallTimeout = 5 * time.Minute

// Reasons of the Events that tell what became of a release whose cluster is deleted.
const (
	// ReasonLeftWithCluster (Normal): the release was left to go with its cluster, untried.
	ReasonLeftWithCluster = "ReleaseLeftWithCluster"
	// ReasonOrphaned (Warning): no uninstall succeeded in time; the release is left in the
	// cluster.
	ReasonOrphaned = "Orphaned"
)

// TeardownBegan is when the teardown of the Flotilla Cluster c began: the moment it was deleted
// (its deletionTimestamp, which the API server stamps). It is zero when c is nil, is not being
// deleted, or is deleted by clusterctl move (its cluster lives on, managed from elsewhere).
//
// This is the one meaning of "teardown" for every component that installs into clusters, and
// its start is the one start of the Ensure deadline (Decide). It is the moment both the packages
// and the addons component can observe: both read Flotilla Clusters (a Package's cluster is
// one; a HelmReleaseProxy's CAPI Cluster is the one of the Flotilla Cluster of the same
// namespace and name, whose pre-delete hook the addons component keeps), where the packages
// component does not read CAPI Clusters and the teardown annotation on them carries no time. It
// is also the user's act, `flotilla delete cluster`, so "5 minutes" means 5 minutes after it,
// for every release of the cluster alike however late its own deletion comes (a release
// uninstalled after its dependents, a Package deleted after the others): the teardown as a
// whole is held at most UninstallTimeout (and one Helm timeout, for a call under way).
func TeardownBegan(c *flotillav1.Cluster) time.Time {
	if c == nil || c.DeletionTimestamp.IsZero() {
		return time.Time{}
	}
	if _, moved := c.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		return time.Time{}
	}
	return c.DeletionTimestamp.Time
}

// Uninstall is what the reconciler of a deleted release (a Package, a HelmReleaseProxy) knows
// when it decides what to do with it.
type Uninstall struct {
	// Policy is the release's uninstallOnClusterDelete; BestEffort when empty.
	Policy flotillav1.UninstallOnClusterDelete
	// ClusterGone is true when the release's cluster is gone or its control plane is being
	// deleted: there is nothing to uninstall from.
	ClusterGone bool
	// TeardownBegan is when the teardown of the release's cluster began (TeardownBegan); zero
	// when the cluster is not being torn down (the release is deleted alone).
	TeardownBegan time.Time
	// Timeout bounds the tries of Ensure, from TeardownBegan, and those of a release deleted
	// alone, from AloneSince; DefaultUninstallTimeout when 0.
	Timeout time.Duration
	// AloneSince is, for a release deleted alone (outside a teardown, where the policy does not
	// apply) whose tries are bounded, when it was deleted; zero when they are not: it is tried
	// until the uninstall succeeds.
	AloneSince time.Time
	// Tried is true once an uninstall was tried and ended, or the cluster could not be reached
	// to try it; Err is why it failed, nil when the release is uninstalled.
	Tried bool
	Err   error
}

// Action is what becomes of a deleted release.
type Action int

const (
	// UninstallNow says to try the uninstall (again).
	UninstallNow Action = iota
	// Uninstalled says the uninstall succeeded: let the object go.
	Uninstalled
	// LeaveWithCluster says to let the object go without an uninstall; the release goes with its
	// cluster (Event ReasonLeftWithCluster).
	LeaveWithCluster
	// Retry says the uninstall failed: try it again within Decision.Remaining (when not 0).
	Retry
	// GiveUp says the uninstall failed and no more tries are due: let the object go and leave the
	// release in the cluster (Event ReasonOrphaned).
	GiveUp
)

// Decision is what Decide says to do.
type Decision struct {
	Action Action
	// Remaining is, for Retry, how long until the release is given up; 0 when never.
	Remaining time.Duration
	// Why says why the release is left (LeaveWithCluster, GiveUp), for Events and conditions.
	Why string
}

// Decide is the one rule of uninstallOnClusterDelete, for packages and addons alike. Outside a
// teardown the policy does not apply: the release is uninstalled, tried again until Timeout
// after AloneSince (when set). In a teardown (TeardownBegan):
//
//   - Skip leaves the release to go with the cluster, untried;
//   - BestEffort (the default) tries once: a cluster that does not answer, or an uninstall that
//     fails, gives the release up at once;
//   - Ensure tries again until Timeout after the teardown began, then gives the release up.
//
// A cluster that is gone has nothing to uninstall from: its releases go with it, whatever the
// policy. now is the clock's reading.
func Decide(u Uninstall, now time.Time) Decision {
	teardown := !u.TeardownBegan.IsZero()
	policy := u.Policy
	if policy == "" {
		policy = flotillav1.UninstallBestEffort
	}
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = DefaultUninstallTimeout
	}
	switch {
	case u.Tried && u.Err == nil:
		return Decision{Action: Uninstalled}
	case u.ClusterGone:
		return Decision{Action: LeaveWithCluster, Why: "the cluster is gone"}
	case teardown && policy == flotillav1.UninstallSkip:
		return Decision{Action: LeaveWithCluster, Why: "the cluster is deleted and uninstallOnClusterDelete is Skip"}
	case !u.Tried:
		return Decision{Action: UninstallNow}
	case teardown && policy == flotillav1.UninstallBestEffort:
		return Decision{Action: GiveUp, Why: "the uninstall failed at the cluster's deletion (uninstallOnClusterDelete BestEffort tries once)"}
	}
	// Ensure in a teardown, or a release deleted alone.
	since, of := u.AloneSince, "of the deletion"
	if teardown {
		since, of = u.TeardownBegan, "of the cluster's deletion (uninstallOnClusterDelete Ensure)"
	}
	if since.IsZero() {
		return Decision{Action: Retry}
	}
	if remaining := since.Add(timeout).Sub(now); remaining > 0 {
		return Decision{Action: Retry, Remaining: remaining}
	}
	return Decision{Action: GiveUp, Why: fmt.Sprintf("no uninstall succeeded within %s %s", timeout, of)}
}
