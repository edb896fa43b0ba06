package packet_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// Cluster API's Cluster and Machine controllers wake up on every write of a PacketCluster or
// PacketMachine and then wait at least a second before they look again. A write that made the
// object Ready before the one that made it provisioned would have them see it provisioned a
// second late. Every version of the objects, as a watch sees them, must be either both or
// neither.
func TestEveryWrittenVersionIsReadyOnlyWhenProvisioned(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc, err := ctrlclient.NewWithWatch(env.Config, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	clusters, err := wc.Watch(ctx, &infrav1.PacketClusterList{})
	g.Expect(err).NotTo(HaveOccurred())
	defer clusters.Stop()
	machines, err := wc.Watch(ctx, &infrav1.PacketMachineList{})
	g.Expect(err).NotTo(HaveOccurred())
	defer machines.Stop()

	w := newWorld(t, goodSecret)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, w.pc).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())
	w.markInfrastructureProvisioned(g)
	pm := w.newMachine(t, "demo-cp-1", true, "c3.small.x86")
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, pm).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())

	type versioned interface {
		ctrlclient.Object
		conditions.Getter
	}
	// check reads the watch's events of the test's namespace until one shows the object
	// provisioned, and returns how many versions it saw.
	check := func(events watch.Interface, provisioned func(ctrlclient.Object) bool) (versions int) {
		deadline := time.After(timeout)
		for {
			select {
			case e := <-events.ResultChan():
				obj, ok := e.Object.(versioned)
				if !ok || obj.GetNamespace() != w.ns || e.Type == watch.Deleted {
					continue
				}
				versions++
				ready := conditions.IsTrue(obj, infrav1.ReadyCondition)
				g.Expect(ready).To(Equal(provisioned(obj)),
					"%T %s version %s: Ready %v, provisioned %v", obj, obj.GetName(), obj.GetResourceVersion(), ready, provisioned(obj))
				if provisioned(obj) {
					return versions
				}
			case <-deadline:
				t.Fatalf("the watch did not show the object provisioned (%d versions)", versions)
			}
		}
	}
	clusterVersions := check(clusters, func(o ctrlclient.Object) bool {
		return ptr.Deref(o.(*infrav1.PacketCluster).Status.Initialization.Provisioned, false)
	})
	machineVersions := check(machines, func(o ctrlclient.Object) bool {
		return ptr.Deref(o.(*infrav1.PacketMachine).Status.Initialization.Provisioned, false)
	})
	g.Expect(clusterVersions).To(BeNumerically(">", 1), "the watch saw the PacketCluster's writes")
	g.Expect(machineVersions).To(BeNumerically(">", 1), "the watch saw the PacketMachine's writes")
}
