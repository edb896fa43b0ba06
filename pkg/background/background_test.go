package background

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func startedQueue(t *testing.T, r *Runner) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(RateLimiter())
	t.Cleanup(q.ShutDown)
	if err := r.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestACallRunsBesideTheCallerAndIsCollectedOnce(t *testing.T) {
	g := NewWithT(t)
	r := &Runner{}
	q := startedQueue(t, r)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	release := make(chan struct{})
	calls := atomic.Int32{}
	fn := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 42, nil
	}

	_, done, err := Do(context.Background(), r, key, "v1", fn)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse(), "the call runs in the background")
	_, done, _ = Do(context.Background(), r, key, "v1", fn)
	g.Expect(done).To(BeFalse(), "still running: not started twice")
	g.Expect(r.Running(key)).To(BeTrue())

	close(release)
	got, _ := q.Get()
	q.Done(got)
	g.Expect(got.NamespacedName).To(Equal(key), "the object is enqueued when its call ends")
	v, done, err := Do(context.Background(), r, key, "v1", fn)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeTrue())
	g.Expect(v).To(Equal(42))
	g.Expect(calls.Load()).To(Equal(int32(1)))

	_, done, _ = Do(context.Background(), r, key, "v1", func(context.Context) (int, error) { return 0, nil })
	g.Expect(done).To(BeFalse(), "a collected call is forgotten: the next Do starts a new one")
}

func TestAnEndedCallAskedForWithAnotherIDIsDroppedAndTheNewOneRuns(t *testing.T) {
	g := NewWithT(t)
	r := &Runner{}
	q := startedQueue(t, r)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	_, _, _ = Do(context.Background(), r, key, "old spec", func(context.Context) (string, error) { return "old", errors.New("old failure") })
	got, _ := q.Get()
	q.Done(got)

	_, done, _ := Do(context.Background(), r, key, "new spec", func(context.Context) (string, error) { return "new", nil })
	g.Expect(done).To(BeFalse())
	got, _ = q.Get()
	q.Done(got)
	v, done, err := Do(context.Background(), r, key, "new spec", func(context.Context) (string, error) { return "again", nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeTrue())
	g.Expect(v).To(Equal("new"))
}

func TestAHangingCallHoldsOnlyItsOwnSlot(t *testing.T) {
	g := NewWithT(t)
	r := &Runner{Limit: 2}
	q := startedQueue(t, r)
	hang := make(chan struct{})
	defer close(hang)
	_, _, _ = Do(context.Background(), r, types.NamespacedName{Name: "hanging"}, "x", func(context.Context) (int, error) {
		<-hang
		return 0, nil
	})
	start := time.Now()
	for _, name := range []string{"a", "b", "c", "d"} {
		_, _, _ = Do(context.Background(), r, types.NamespacedName{Name: name}, "x", func(context.Context) (int, error) {
			time.Sleep(10 * time.Millisecond)
			return 1, nil
		})
	}
	for range 4 {
		got, _ := q.Get()
		g.Expect(got.Name).NotTo(Equal("hanging"))
		q.Done(got)
	}
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}

func TestCallsThatEndBeforeTheControllerStartsAreEnqueuedWhenItDoes(t *testing.T) {
	g := NewWithT(t)
	r := &Runner{}
	key := types.NamespacedName{Name: "early"}
	_, _, _ = Do(context.Background(), r, key, "x", func(context.Context) (int, error) { return 1, nil })
	g.Eventually(func() bool { return r.Running(key) }).Should(BeFalse())
	q := startedQueue(t, r)
	got, _ := q.Get()
	g.Expect(got.NamespacedName).To(Equal(key))
}

func TestIDsDifferWithTheirInputsAndKeepThemSecret(t *testing.T) {
	g := NewWithT(t)
	a, err := ID("install", map[string]string{"password": "s3cret", "chart": "a"})
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := ID("install", map[string]string{"password": "s3cret", "chart": "b"})
	again, _ := ID("install", map[string]string{"chart": "a", "password": "s3cret"})
	g.Expect(a).NotTo(Equal(b))
	g.Expect(a).To(Equal(again))
	g.Expect(a).To(HavePrefix("install "))
	g.Expect(a).NotTo(ContainSubstring("s3cret"))
	_, err = ID("install", func() {})
	g.Expect(err).To(MatchError(ContainSubstring("digesting the inputs of install")))
}

func TestFailedCallsInARowAreRetriedLaterAndLater(t *testing.T) {
	g := NewWithT(t)
	r := &Runner{}
	q := startedQueue(t, r)
	key := types.NamespacedName{Name: "failing"}
	fail := func(context.Context) (int, error) { return 0, errors.New("bad chart") }
	collect := func(fn func(context.Context) (int, error)) error {
		_, _, _ = Do(context.Background(), r, key, "x", fn)
		got, _ := q.Get()
		q.Done(got)
		_, done, err := Do(context.Background(), r, key, "x", fn)
		g.Expect(done).To(BeTrue())
		return err
	}
	var waits []time.Duration
	for range 3 {
		g.Expect(collect(fail)).To(HaveOccurred())
		waits = append(waits, r.RetryAfter(key))
	}
	g.Expect(waits).To(Equal([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}))
	g.Expect(collect(func(context.Context) (int, error) { return 1, nil })).To(Succeed())
	g.Expect(collect(fail)).To(HaveOccurred())
	g.Expect(r.RetryAfter(key)).To(Equal(time.Second), "a success ends the row")
	for range 20 {
		g.Expect(collect(fail)).To(HaveOccurred())
	}
	g.Expect(r.RetryAfter(key)).To(Equal(time.Minute))
}
