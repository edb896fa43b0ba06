package manager

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Cluster API's ClusterCache sends a cluster event on an unbuffered channel and waits until it
// is taken (sendEventsToClusterSources). A source whose controller has stopped must still take
// it, or the ClusterCache's reconcile, and the manager's shutdown with it, waits for ever.
func TestAClusterSourceTakesEventsUntilTheManagerHasStopped(t *testing.T) {
	g := NewWithT(t)
	send := func(ch chan event.GenericEvent) bool {
		select {
		case ch <- event.GenericEvent{Object: &clusterv1.Cluster{}}:
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	}
	start := func(wrap func(source.Source) source.Source) (chan event.GenericEvent, func()) {
		ch := make(chan event.GenericEvent)
		mapped := handler.EnqueueRequestsFromMapFunc(func(context.Context, ctrlclient.Object) []ctrl.Request {
			return []reconcile.Request{{}}
		})
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		controllerCtx, stopController := context.WithCancel(context.Background())
		g.Expect(wrap(source.Channel(ch, mapped)).Start(controllerCtx, queue)).To(Succeed())
		g.Expect(send(ch)).To(BeTrue(), "a running controller takes events")
		return ch, func() { stopController(); queue.ShutDown() }
	}

	plain, stopPlain := start(func(s source.Source) source.Source { return s })
	stopPlain()
	g.Eventually(func() bool { return send(plain) }).WithTimeout(5*time.Second).Should(BeFalse(),
		"Cluster API's own source stops reading with its controller: the ClusterCache's send would wait")

	stopped, markStopped := context.WithCancel(context.Background())
	lasting, stopLasting := start(func(s source.Source) source.Source { return lastingSource{Source: s, stopped: stopped} })
	stopLasting()
	g.Consistently(func() bool { return send(lasting) }).WithTimeout(2*time.Second).Should(BeTrue(),
		"the controller has stopped, and its source still takes events, which its shut down queue drops")
	markStopped()
	g.Eventually(func() bool { return send(lasting) }).WithTimeout(5*time.Second).Should(BeFalse(),
		"once the manager has stopped, the source ends")
}
