// Package background keeps slow calls out of a controller's workers, so that one object whose
// call hangs never delays another (no head-of-line blocking).
//
// A Helm install may take as long as its timeout: a hook Job that never completes, a release
// that waits for workloads that never become available, a registry or a cluster that accepts a
// connection and never answers. Run inside Reconcile, such a call holds one of the controller's
// few workers for minutes, and a handful of them hold every worker: the healthy objects of every
// cluster wait behind them. A Runner runs the call in a goroutine of its own instead, and the
// reconcile returns at once:
//
//	res, done, err := background.Do(ctx, r.calls, key, "install "+hash, func(ctx context.Context) (helm.Result, error) {
//		return r.Installer.InstallOrUpgrade(ctx, cfg, rel)
//	})
//	if !done {
//		return ctrl.Result{}, nil // the Runner's Source brings the object back when the call ends
//	}
//
// Do is "call or collect". The first Do for an object starts the call; while it runs, Do
// returns done=false; once it ended, the Runner's Source enqueues the object, and the next Do
// with the same id returns the call's value and error and forgets it. An id names what the call
// was asked to do (an action and a digest of its inputs): a finished call whose id differs from
// the one asked for is dropped and the new call starts, so a spec that changed while Helm worked
// gets a call of its own, made from the new spec. A running call is never interrupted (Helm
// actions run to their end, bounded by their timeout), so a Do with another id waits for it.
//
// The calls get the reconcile's context without its cancellation (its logger and values stay):
// the reconcile returns long before the call ends. Each call bounds itself (a Helm timeout).
//
// At most Limit calls run at once (DefaultLimit when 0); the others wait for a slot in the order
// they were asked for. A call that hangs holds its own slot until its timeout and nothing else:
// the workers stay free, so status writes, deletions and the calls of other objects go on.
// Calls live in memory only: a process that dies forgets them, and whatever they left half done
// is the next call's to repair (pkg/helm recovers releases left pending).
//
// A failed call is not retried at once: the reconcile that collects it returns
// RetryAfter(key) as its RequeueAfter, a second after the first failure in a row and doubling
// up to a minute (returning the error instead would not do: the reconcile that starts the
// next call returns no error, which resets the controller's own back-off).
//
// RateLimiter is the retry policy of such controllers: per object only. controller-runtime's
// default also draws every retry from one bucket shared by all objects (10 per second), so the
// retries of many failing objects would delay the retry of a healthy one.
package background
