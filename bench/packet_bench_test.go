package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/devicesim"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// Shape and pace of the Packet benchmark: issue 6's "1 control plane + 3 workers against the
// simulator with 5 s provisioning delay", devices queued 1 s before that (the simulator's
// default), and a window of rest to count the Metal API calls of a settled cluster.
const (
	packetWorkers      = 3
	packetQueuedFor    = time.Second
	packetProvisioning = 5 * time.Second
	packetIdleWindow   = time.Minute
)

// BenchmarkPacket measures the Packet provider against the Metal API simulator, with the
// manager's Packet, Cluster API core and kubeadm, and Cluster components in process on a test
// API server (internal/testenv), and simulated devices that boot their kubeadm cloud-init
// (package devicesim):
//   - packet-provision-s: from the Flotilla Cluster applied until every Machine (1 control plane,
//     3 workers) has its infrastructure provisioned (an active device). The workers' devices
//     are created only once the control plane device's kubeadm init is done, so this includes
//     one simulated boot;
//   - packet-ready-s: until the Flotilla Cluster is Ready (every Node healthy);
//   - metal-calls-per-machine: Metal API requests from the Cluster applied to Ready, divided by
//     the machines;
//   - metal-calls-per-machine-hour: requests during packetIdleWindow with the cluster Ready,
//     per machine, scaled to an hour.
//
// It logs (go test -v) when each stage was first seen, from the CAPI Cluster's infrastructure
// to every device active, which shows where the time goes (docs/packet-provider.md, *Polling
// and API cost*).
func BenchmarkPacket(b *testing.B) {
	for range b.N {
		runPacketBenchmark(b)
	}
}

func runPacketBenchmark(b *testing.B) {
	ctx := b.Context()
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			b.Error(err)
		}
	}()

	const apiKey = "bench-key"
	devices, err := devicesim.New(devicesim.Options{Dir: b.TempDir(), BinRoot: binaries.DefaultRoot()})
	if err != nil {
		b.Fatal(err)
	}
	defer devices.Close()
	sim := metalsim.New(metalsim.Options{APIKey: apiKey, QueuedFor: packetQueuedFor, ProvisioningFor: packetProvisioning, Devices: devices})
	srv := httptest.NewServer(sim)
	defer srv.Close()

	const ns, name = "default", "metal"
	kc := env.Client
	for _, obj := range []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infrav1.PacketCredentialsNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: infrav1.DefaultPacketCredentialsSecret},
			Data:       map[string][]byte{infrav1.PacketAPIKeySecretKey: []byte(apiKey)},
		},
		// The admin's default identity: the simulator's key, sent to the simulator, for the
		// clusters of namespace default.
		&infrav1.PacketClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: infrav1.DefaultPacketClusterIdentity},
			Spec: infrav1.PacketClusterIdentitySpec{
				APIURL: srv.URL + metalsim.BasePath, CredentialsSecretName: infrav1.DefaultPacketCredentialsSecret,
				AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{ns}},
			},
		},
	} {
		if err := kc.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	stop := startManager(b, env, []string{"capi", "kubeadm", "packet", "cluster"}, "")
	defer stop()

	objs := []ctrlclient.Object{
		&infrav1.PacketDatacenterConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       infrav1.PacketDatacenterConfigSpec{ProjectID: "bench", Metro: "da"},
		},
		&infrav1.PacketMachineConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86"},
		},
		&flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: flotillav1.ClusterSpec{
				KubernetesVersion: "1.36",
				ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1, MachineGroupRef: &flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: name}},
				DatacenterRef:     flotillav1.Ref{Kind: packetspec.DatacenterConfigKind, Name: name},
				WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{
					Name: "md-0", Count: packetWorkers, MachineGroupRef: flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: name},
				}},
			},
		},
	}
	start := time.Now()
	for _, obj := range objs {
		if err := kc.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	const machines = 1 + packetWorkers
	var provisioned, ready time.Duration
	tl := &timeline{start: start}
	cluster := &flotillav1.Cluster{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := tl.observe(ctx, kc, ns, name); err != nil {
			return false, err
		}
		if provisioned == 0 && tl.provisioned(machines) {
			provisioned = time.Since(start)
			tl.record("every Machine's device active")
		}
		if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(cluster.Status.Conditions, flotillav1.ReadyCondition) {
			ready = time.Since(start)
		}
		return provisioned > 0 && ready > 0, nil
	})
	b.Logf("Packet cluster timeline (s from the Cluster applied):\n%s", tl)
	if err != nil {
		cond := meta.FindStatusCondition(cluster.Status.Conditions, flotillav1.ReadyCondition)
		b.Fatalf("waiting for the Packet cluster: %v; Ready: %+v", err, cond)
	}
	creationCalls := sim.Stats().Total
	b.ReportMetric(provisioned.Seconds(), "packet-provision-s")
	b.ReportMetric(ready.Seconds(), "packet-ready-s")
	b.ReportMetric(float64(creationCalls)/machines, "metal-calls-per-machine")

	sim.ResetStats()
	select {
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	case <-time.After(packetIdleWindow):
	}
	idle := sim.Stats().Total
	b.ReportMetric(float64(idle)/machines*float64(time.Hour)/float64(packetIdleWindow), "metal-calls-per-machine-hour")

	// Delete the cluster as `flotilla delete cluster` does, so the simulated devices stop.
	if err := kc.Delete(ctx, cluster); err != nil {
		b.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		return len(sim.Devices("bench")) == 0 && len(devices.Running()) == 0, nil
	})
	if err != nil {
		b.Fatalf("waiting for the devices to be deleted: %v", err)
	}
}

// startManager runs the manager's components against env until the returned function is
// called; executable is the binary the inmemory component runs its provider process with.
func startManager(b *testing.B, env *testenv.Environment, components []string, executable string) func() {
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	identities, err := env.ManagerIdentities(ctx)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	m, err := manager.New(ctx, identities, manager.Options{
		// Each benchmark starts a manager of its own in this process.
		SkipControllerNameValidation: true,
		Components:                   components,
		HealthProbeBindAddress:       "0",
		MetricsBindAddress:           "0",
		Home:                         b.TempDir(),
		BinRoot:                      binaries.DefaultRoot(),
		Executable:                   executable,
	})
	if err != nil {
		cancel()
		b.Fatalf("creating the manager: %v", err)
	}
	// The clock starts on a running management cluster, as a user's would: the manager elected,
	// its webhook server answering, its webhooks registered.
	_, stop, err := testenv.RunManager(ctx, m.Manager(), m.Run, testenv.Readiness{Checks: []func() error{m.Ready}})
	if err != nil {
		cancel()
		b.Fatalf("waiting for the manager: %v", err)
	}
	return func() {
		defer cancel()
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			b.Errorf("manager: %v", err)
		}
	}
}

// timeline records when the stages of a Packet cluster's creation were first seen, polled from
// the API server (and the endpoint), so that the benchmark shows where its time goes.
type timeline struct {
	start  time.Time
	events []timelineEvent
	seen   map[string]bool
	// infraProvisioned counts the Machines whose device is active.
	infraProvisioned int
}

type timelineEvent struct {
	at   time.Duration
	what string
}

func (t *timeline) record(what string) {
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if !t.seen[what] {
		t.seen[what] = true
		t.events = append(t.events, timelineEvent{at: time.Since(t.start), what: what})
	}
}

func (t *timeline) provisioned(machines int) bool { return t.infraProvisioned == machines }

// observe records the stages reached now: the CAPI Cluster's infrastructure and control plane,
// the kubeconfig Secret, the endpoint accepting connections, and each Machine's bootstrap data
// and device.
func (t *timeline) observe(ctx context.Context, kc ctrlclient.Client, ns, name string) error {
	c := &clusterv1.Cluster{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, c); ctrlclient.IgnoreNotFound(err) != nil {
		return err
	}
	if ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) {
		t.record("CAPI Cluster infrastructure provisioned (PacketCluster has the elastic IP)")
	}
	if ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) {
		t.record("CAPI Cluster control plane initialized (Cluster API read kubeadm-config through its cluster cache)")
	}
	err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name + "-kubeconfig"}, &corev1.Secret{})
	if ctrlclient.IgnoreNotFound(err) != nil {
		return err
	}
	if err == nil {
		t.record("kubeconfig Secret written")
	}
	if endpoint := c.Spec.ControlPlaneEndpoint; endpoint.IsValid() {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(endpoint.Host, strconv.Itoa(int(endpoint.Port))))
		if err == nil {
			_ = conn.Close()
			t.record("endpoint accepts connections (kubeadm init's kube-apiserver)")
		}
	}
	list := &clusterv1.MachineList{}
	if err := kc.List(ctx, list, ctrlclient.InNamespace(ns)); err != nil {
		return err
	}
	t.infraProvisioned = 0
	for _, m := range list.Items {
		role := "worker"
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			role = "control plane"
		}
		t.record("first " + role + " Machine created")
		if m.Spec.Bootstrap.DataSecretName != nil {
			t.record("first " + role + " Machine has bootstrap data")
		}
		if ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false) {
			t.record("first " + role + " Machine's device active")
			t.infraProvisioned++
		}
	}
	return nil
}

func (t *timeline) String() string {
	var b strings.Builder
	for _, e := range t.events {
		fmt.Fprintf(&b, "%6.1f  %s\n", e.at.Seconds(), e.what)
	}
	return b.String()
}
