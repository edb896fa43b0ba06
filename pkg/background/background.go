package background

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// DefaultLimit is how many calls of a Runner run at once when Runner.Limit is 0.
const DefaultLimit = 32

// Runner runs the slow calls of one controller, at most one per object at a time. The zero
// value is ready to use; register Source with the controller so that it hears of ended calls.
type Runner struct {
	// Limit bounds the calls running at once; DefaultLimit when 0.
	Limit int

	mu    sync.Mutex
	calls map[types.NamespacedName]*call
	// failures counts the calls of each object collected failed in a row.
	failures map[types.NamespacedName]int
	slots    chan struct{}
	// queue is the controller's work queue once Source started; ended holds the objects whose
	// calls ended before that.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	ended []types.NamespacedName
}

// call is one call of the Runner: running until done.
type call struct {
	id    string
	done  bool
	value any
	err   error
}

// Do returns the outcome of the call id for key once it ended (done is true, and the call is
// forgotten). Otherwise it starts fn, unless a call for key is running already, and returns
// done=false: the Runner's Source enqueues key when the call ends. A call of another id that
// ended is dropped, and fn is started; one that is running is waited for.
func Do[T any](ctx context.Context, r *Runner, key types.NamespacedName, id string, fn func(context.Context) (T, error)) (value T, done bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[types.NamespacedName]*call{}
	}
	if c := r.calls[key]; c != nil {
		switch {
		case !c.done:
			return value, false, nil
		case c.id == id:
			delete(r.calls, key)
			r.countFailure(key, c.err)
			if c.value != nil {
				v, ok := c.value.(T)
				if !ok {
					return value, true, fmt.Errorf("background call %q of %s returned %T, not %T", id, key, c.value, value)
				}
				value = v
			}
			return value, true, c.err
		}
	}
	c := &call{id: id}
	r.calls[key] = c
	if r.slots == nil {
		limit := r.Limit
		if limit <= 0 {
			limit = DefaultLimit
		}
		r.slots = make(chan struct{}, limit)
	}
	slots := r.slots
	ctx = context.WithoutCancel(ctx)
	go func() {
		slots <- struct{}{}
		v, err := fn(ctx)
		<-slots
		r.end(key, c, v, err)
	}()
	return value, false, nil
}

// Running reports whether a call for key has not ended yet.
func (r *Runner) Running(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[key]
	return c != nil && !c.done
}

// Forget drops what the Runner holds for key: the outcome of an ended call nobody collected (its
// object is gone). A running call is left to end.
func (r *Runner) Forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls[key]; c != nil && c.done {
		delete(r.calls, key)
	}
	delete(r.failures, key)
}

// Retry bounds of RetryAfter and RateLimiter. The longest wait is a minute: a failure is as
// often a workload cluster that is briefly unreachable (its API server restarting) as a chart
// that cannot work, and a longer wait would leave a release alone long after its cluster came
// back.
const (
	firstRetry = time.Second
	lastRetry  = time.Minute
)

// RetryAfter is how long to wait before calling again for key after a failed call: a second
// after the first failure in a row, doubling with each further one up to a minute. A
// reconcile that collected a failed call returns it as its RequeueAfter (a reconcile that
// starts a call returns no error, which would reset the controller's own back-off).
func (r *Runner) RetryAfter(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := firstRetry
	for i := 1; i < r.failures[key] && d < lastRetry; i++ {
		d *= 2
	}
	return min(d, lastRetry)
}

// countFailure records the outcome of a collected call of key.
func (r *Runner) countFailure(key types.NamespacedName, err error) {
	if err == nil {
		delete(r.failures, key)
		return
	}
	if r.failures == nil {
		r.failures = map[types.NamespacedName]int{}
	}
	r.failures[key]++
}

// end records the outcome of c and wakes the controller for key.
func (r *Runner) end(key types.NamespacedName, c *call, value any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.done, c.value, c.err = true, value, err
	if r.queue == nil {
		r.ended = append(r.ended, key)
		return
	}
	r.queue.Add(reconcile.Request{NamespacedName: key})
}

// Source is the source of the controller's requests for objects whose calls ended.
func (r *Runner) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.queue = q
		for _, key := range r.ended {
			q.Add(reconcile.Request{NamespacedName: key})
		}
		r.ended = nil
		return nil
	})
}

// RateLimiter is the retry back-off of a controller whose objects fail independently: per object
// (5 ms doubling up to a minute), with no bucket shared between objects.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, lastRetry)
}

// ID names a call by what it does and the inputs it does it with: action, then the SHA-256 of
// the inputs' JSON. Two calls with equal inputs share an ID; the digest keeps secrets among
// the inputs (registry credentials) out of the ID.
func ID(action string, inputs any) (string, error) {
	b, err := json.Marshal(inputs)
	if err != nil {
		return "", fmt.Errorf("digesting the inputs of %s: %w", action, err)
	}
	sum := sha256.Sum256(b)
	return action + " " + hex.EncodeToString(sum[:]), nil
}
