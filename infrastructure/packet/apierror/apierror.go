package apierror

import (
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// Waits after failures that a fast retry does not fix.
const (
	// CredentialsWait: the identity or its key is missing, refused, or not allowed here; an
	// admin has to fix the identity or its Secret.
	CredentialsWait = time.Minute
	// RateLimitWait: a 429 without Retry-After.
	RateLimitWait = 30 * time.Second
)

// Outcome is what to do about an error.
type Outcome struct {
	// Reason is the condition reason that explains the error.
	Reason string
	// RequeueAfter, when not zero, is when to try again; the error is then not returned.
	RequeueAfter time.Duration
	// Terminal says retrying the same request cannot succeed.
	Terminal bool
}

// Classify returns the outcome of err, a Metal API or credentials error.
func Classify(err error) Outcome {
	switch {
	case errors.Is(err, credentials.ErrNotAllowed):
		return Outcome{Reason: infrav1.IdentityNotAllowedReason, RequeueAfter: CredentialsWait}
	case errors.Is(err, credentials.ErrUnavailable) || metal.IsUnauthorized(err):
		return Outcome{Reason: infrav1.CredentialsUnavailableReason, RequeueAfter: CredentialsWait}
	case metal.IsRateLimited(err):
		wait := metal.RetryAfter(err)
		if wait <= 0 {
			wait = RateLimitWait
		}
		return Outcome{Reason: infrav1.RateLimitedReason, RequeueAfter: wait}
	case metal.IsInvalid(err):
		return Outcome{Reason: infrav1.InvalidSpecReason, Terminal: true}
	default:
		return Outcome{Reason: infrav1.MetalAPIErrorReason}
	}
}

// Result is what a reconciler returns for err, whose outcome o is: a terminal error that is not
// retried, a requeue after o.RequeueAfter without the error, or the error for controller-runtime's
// back-off.
func (o Outcome) Result(err error) (ctrl.Result, error) {
	switch {
	case o.Terminal:
		return ctrl.Result{}, reconcile.TerminalError(err)
	case o.RequeueAfter > 0:
		return ctrl.Result{RequeueAfter: o.RequeueAfter}, nil
	default:
		return ctrl.Result{}, err
	}
}
