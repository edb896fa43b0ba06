package packet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
)

const (
	cloudInit = "#cloud-config\nruncmd:\n- kubeadm init --config /run/kubeadm/kubeadm.yaml\n"
	timeout   = 30 * time.Second
)

// world is one cluster of a test: its namespace, Metal project, CAPI Cluster and PacketCluster.
type world struct {
	ns, project string
	cluster     *clusterv1.Cluster
	pc          *infrav1.PacketCluster
}

// newWorld creates a CAPI Cluster and its PacketCluster (owned by it, as CAPI would make it)
// using a PacketClusterIdentity of its own (named after the test's namespace, which it allows)
// whose key is in the Secret secretName, and marks the Cluster's infrastructure provisioned
// once the PacketCluster says so (what CAPI's Cluster reconciler, not running here, would do).
func newWorld(t *testing.T, secretName string) *world {
	t.Helper()
	return newWorldAt(t, secretName, apiURL)
}

// newWorldAt is newWorld with the Metal API at url.
func newWorldAt(t *testing.T, secretName, url string) *world {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	w := &world{ns: env.NewNamespace(t), project: string(uuid.NewUUID())}
	w.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "demo"},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: "demo"},
		},
	}
	g.Expect(env.Client.Create(ctx, w.cluster)).To(Succeed())
	w.pc = &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.ns, Name: "demo",
			Labels:          map[string]string{clusterv1.ClusterNameLabel: "demo"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "demo", UID: w.cluster.UID}},
		},
		Spec: infrav1.PacketClusterSpec{
			IdentityRef: &infrav1.PacketClusterIdentityReference{Name: newIdentity(t, w.ns, url, secretName, w.ns)},
			ProjectID:   w.project, Metro: "da",
		},
	}
	g.Expect(env.Client.Create(ctx, w.pc)).To(Succeed())
	return w
}

// newIdentity creates the PacketClusterIdentity name, which sends the key of Secret secretName to
// url for the clusters of the namespaces allowed, and deletes it when the test ends.
func newIdentity(t *testing.T, name, url, secretName string, allowed ...string) string {
	t.Helper()
	id := &infrav1.PacketClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: infrav1.PacketClusterIdentitySpec{APIURL: url, CredentialsSecretName: secretName,
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: allowed}},
	}
	must(env.Client.Create(context.Background(), id))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), id) })
	return name
}

// markInfrastructureProvisioned sets the Cluster's status.initialization.infrastructureProvisioned.
func (w *world) markInfrastructureProvisioned(g Gomega) {
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(w.cluster), w.cluster)).To(Succeed())
	base := w.cluster.DeepCopy()
	w.cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	g.Expect(env.Client.Status().Patch(ctx, w.cluster, ctrlclient.MergeFrom(base))).To(Succeed())
}

// newMachine creates a Machine with bootstrap data and its PacketMachine, as CAPI's Machine
// reconciler and the kubeadm bootstrap provider would leave them.
func (w *world) newMachine(t *testing.T, name string, controlPlane bool, plan string) *infrav1.PacketMachine {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name + "-bootstrap", Labels: map[string]string{clusterv1.ClusterNameLabel: "demo"}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte(cloudInit), "format": []byte("cloud-config")},
	})).To(Succeed())
	labels := map[string]string{clusterv1.ClusterNameLabel: "demo"}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName:       "demo",
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachine", Name: name},
		},
	}
	g.Expect(env.Client.Create(ctx, machine)).To(Succeed())
	pm := &infrav1.PacketMachine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.ns, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: name, UID: machine.UID}},
		},
		Spec: infrav1.PacketMachineSpec{Plan: plan, OS: "ubuntu_24_04", BillingCycle: "hourly", Tags: []string{"team:platform"}},
	}
	g.Expect(env.Client.Create(ctx, pm)).To(Succeed())
	return pm
}

func get[T ctrlclient.Object](g Gomega, obj T) T {
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

func readyOf(g Gomega, obj conditions.Getter) *metav1.Condition {
	c := conditions.Get(obj, infrav1.ReadyCondition)
	g.Expect(c).NotTo(BeNil(), "no Ready condition yet")
	return c
}

func TestAClusterGetsAnElasticIPAndItsMachinesGetDevicesThatAreReleasedOnDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	w := newWorld(t, goodSecret)

	g.Eventually(func(g Gomega) {
		pc := get(g, w.pc)
		g.Expect(pc.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
		g.Expect(pc.Spec.ControlPlaneEndpoint.Port).To(BeEquivalentTo(6443))
		g.Expect(pc.Status.ElasticIP).NotTo(BeNil())
		g.Expect(pc.Spec.ControlPlaneEndpoint.Host).To(Equal(pc.Status.ElasticIP.Address))
		g.Expect(pc.Status.FailureDomains).To(ConsistOf(HaveField("Name", "da")))
		g.Expect(readyOf(g, pc).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	g.Expect(sim.IPReservations(w.project)).To(ConsistOf(And(
		HaveField("Address", w.pc.Spec.ControlPlaneEndpoint.Host),
		HaveField("Tags", ContainElement(infrav1.PacketEndpointTagPrefix+w.ns+"/demo")),
	)))

	w.markInfrastructureProvisioned(g)
	cp := w.newMachine(t, "demo-cp-1", true, "c3.small.x86")
	worker := w.newMachine(t, "demo-md-1", false, "m3.small.x86")

	for _, pm := range []*infrav1.PacketMachine{cp, worker} {
		g.Eventually(func(g Gomega) {
			pm := get(g, pm)
			g.Expect(pm.Spec.ProviderID).To(HavePrefix("equinixmetal://"))
			g.Expect(pm.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
			g.Expect(pm.Status.InstanceState).To(Equal(metal.DeviceStateActive))
			g.Expect(pm.Status.Addresses).To(ContainElements(HaveField("Type", "ExternalIP"), HaveField("Type", "InternalIP")))
			g.Expect(pm.Status.FailureDomain).To(Equal("da"))
			g.Expect(readyOf(g, pm).Reason).To(Equal(infrav1.ProvisionedReason))
		}, timeout).Should(Succeed())
	}

	devices := sim.Devices(w.project)
	g.Expect(devices).To(HaveLen(2))
	byHost := map[string]metal.Device{}
	for _, d := range devices {
		byHost[d.Hostname] = d
		g.Expect(d.Userdata).To(Equal(cloudInit), "the bootstrap data is the device's userdata")
		g.Expect(d.Tags).To(ContainElements(infrav1.PacketClusterTagPrefix+w.ns+"/demo", "team:platform"))
	}
	g.Expect(byHost["demo-cp-1"].Tags).To(ContainElement(infrav1.PacketControlPlaneTag))
	g.Expect(byHost["demo-cp-1"].Plan.Slug).To(Equal("c3.small.x86"))
	g.Expect(byHost["demo-cp-1"].IPAddresses).To(ContainElement(HaveField("Address", w.pc.Spec.ControlPlaneEndpoint.Host)),
		"the control plane device holds the elastic IP")
	g.Expect(byHost["demo-md-1"].IPAddresses).NotTo(ContainElement(HaveField("Address", w.pc.Spec.ControlPlaneEndpoint.Host)))
	g.Expect(get(g, cp).Spec.ProviderID).To(Equal("equinixmetal://" + byHost["demo-cp-1"].ID))

	for _, pm := range []*infrav1.PacketMachine{cp, worker} {
		g.Expect(env.Client.Delete(ctx, pm)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(sim.Devices(w.project)).To(BeEmpty())
		for _, pm := range []*infrav1.PacketMachine{cp, worker} {
			err := env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(pm), &infrav1.PacketMachine{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}
	}, timeout).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, w.pc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(sim.IPReservations(w.project)).To(BeEmpty())
		err := env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(w.pc), &infrav1.PacketCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout).Should(Succeed())
}

func TestAPacketClusterDeletedWhileItsIPIsStillAssignedReleasesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	w := newWorld(t, goodSecret)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, w.pc).Status.ElasticIP).NotTo(BeNil())
	}, timeout).Should(Succeed())
	w.markInfrastructureProvisioned(g)
	cp := w.newMachine(t, "demo-cp-1", true, "c3.small.x86")
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, cp).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, w.pc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(sim.IPReservations(w.project)).To(BeEmpty())
	}, timeout).Should(Succeed())
	devices := sim.Devices(w.project)
	g.Expect(devices).To(HaveLen(1))
	g.Expect(devices[0].IPAddresses).To(HaveLen(2), "only the device's own addresses remain")
}

func TestADeviceCreatedBeforeACrashIsAdoptedNotDuplicated(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, goodSecret)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, w.pc).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())

	// A previous manager created the device and died before recording its ID.
	c, err := metal.New(metal.Options{BaseURL: apiURL, APIKey: apiKey})
	g.Expect(err).NotTo(HaveOccurred())
	earlier, _, err := c.EnsureDevice(context.Background(), w.project, infrav1.PacketMachineTagPrefix+w.ns+"/demo-md-1", metal.DeviceCreateRequest{
		Hostname: "demo-md-1", Plan: "m3.small.x86", Metro: "da", OperatingSystem: "ubuntu_24_04", Userdata: cloudInit,
	})
	g.Expect(err).NotTo(HaveOccurred())

	w.markInfrastructureProvisioned(g)
	pm := w.newMachine(t, "demo-md-1", false, "m3.small.x86")
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, pm).Spec.ProviderID).To(Equal("equinixmetal://" + earlier.ID))
		g.Expect(pm.Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())
	g.Expect(sim.Devices(w.project)).To(HaveLen(1))
}

func TestFailuresShowInTheReadyCondition(t *testing.T) {
	tests := []struct {
		name       string
		secret     string
		plan       string
		hostname   string
		wantReason string
		wantMsg    string
	}{
		{name: "a wrong API key", secret: badSecret, wantReason: infrav1.CredentialsUnavailableReason, wantMsg: "Invalid authentication token"},
		{name: "a missing credentials Secret", secret: "nope", wantReason: infrav1.CredentialsUnavailableReason, wantMsg: "Secret flotilla-system/nope of PacketClusterIdentity"},
		{name: "an unknown plan", secret: goodSecret, plan: "z9.huge", hostname: "demo-md-plan", wantReason: infrav1.InvalidSpecReason, wantMsg: `Plan "z9.huge" is not a valid plan`},
		{name: "a device that fails to provision", secret: goodSecret, plan: "m3.small.x86", hostname: "demo-md-doomed", wantReason: infrav1.DeviceFailedReason, wantMsg: "failed to provision"},
	}
	sim.InjectFault(metalsim.Fault{FailDevicesWithHostname: "doomed"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newWorld(t, tt.secret)
			if tt.hostname == "" {
				g.Eventually(func(g Gomega) {
					c := readyOf(g, get(g, w.pc))
					g.Expect(c.Reason).To(Equal(tt.wantReason))
					g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
				}, timeout).Should(Succeed())
				g.Expect(sim.IPReservations(w.project)).To(BeEmpty())
				return
			}
			g.Eventually(func(g Gomega) {
				g.Expect(get(g, w.pc).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
			}, timeout).Should(Succeed())
			w.markInfrastructureProvisioned(g)
			pm := w.newMachine(t, tt.hostname, false, tt.plan)
			g.Eventually(func(g Gomega) {
				c := readyOf(g, get(g, pm))
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(tt.wantReason))
				g.Expect(c.Message).To(ContainSubstring(tt.wantMsg))
				if tt.wantReason == infrav1.DeviceFailedReason {
					// The condition and the instance state it speaks of come in one status write (package objectpatch).
					g.Expect(pm.Status.InstanceState).To(Equal(metal.DeviceStateFailed))
				}
			}, timeout).Should(Succeed())
			if tt.wantReason == infrav1.DeviceFailedReason {
				g.Expect(sim.Devices(w.project)).To(HaveLen(1))
			} else {
				g.Expect(sim.Devices(w.project)).To(BeEmpty())
			}
		})
	}
}

func TestRateLimitedCallsAreRetriedAndProvisioningCostsFewCalls(t *testing.T) {
	g := NewWithT(t)
	w := newWorld(t, goodSecret)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, w.pc).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())
	w.markInfrastructureProvisioned(g)

	before := sim.Stats()
	sim.InjectFault(metalsim.Fault{Method: http.MethodPost, Path: "/projects/" + w.project + "/devices", Status: http.StatusTooManyRequests,
		RetryAfter: metalsim.Duration(time.Second), Times: 2})
	pm := w.newMachine(t, "demo-md-limited", false, "m3.small.x86")
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, pm).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())
	g.Expect(sim.Devices(w.project)).To(HaveLen(1))

	after := sim.Stats()
	calls := 0
	for route, n := range after.ByRoute {
		if strings.Contains(route, "devices") {
			calls += n - before.ByRoute[route]
		}
	}
	t.Logf("Metal API device calls to provision one machine (2 of them rate limited): %d", calls)
	g.Expect(calls).To(BeNumerically("<=", 12))

	// Provisioned: no more polling while nothing changes.
	getDevice := "GET " + metalsim.BasePath + "/devices/" + strings.TrimPrefix(pm.Spec.ProviderID, infrav1.PacketProviderIDPrefix)
	settled := sim.Stats().ByPath[getDevice]
	time.Sleep(3 * time.Second)
	g.Expect(sim.Stats().ByPath[getDevice]).To(Equal(settled))
}

func TestOneControlPlaneAndThreeWorkersWithFiveSecondProvisioningAreProvisionedWithinThirtySeconds(t *testing.T) {
	g := NewWithT(t)
	// A simulator of its own, with the delays of the target.
	slow := metalsim.New(metalsim.Options{APIKey: apiKey, QueuedFor: time.Second, ProvisioningFor: 5 * time.Second})
	srv := httptest.NewServer(slow)
	t.Cleanup(srv.Close)
	w := newWorldAt(t, goodSecret, srv.URL+metalsim.BasePath)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, w.pc).Status.Initialization.Provisioned).To(HaveValue(BeTrue()))
	}, timeout).Should(Succeed())
	w.markInfrastructureProvisioned(g)

	start := time.Now()
	machines := []*infrav1.PacketMachine{w.newMachine(t, "bench-cp-1", true, "c3.small.x86")}
	for _, name := range []string{"bench-md-1", "bench-md-2", "bench-md-3"} {
		machines = append(machines, w.newMachine(t, name, false, "m3.small.x86"))
	}
	g.Eventually(func(g Gomega) {
		for _, pm := range machines {
			g.Expect(get(g, pm).Status.Initialization.Provisioned).To(HaveValue(BeTrue()), pm.Name)
		}
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	elapsed := time.Since(start)

	stats := slow.Stats()
	deviceCalls := 0
	for route, n := range stats.ByRoute {
		if strings.Contains(route, "devices") {
			deviceCalls += n
		}
	}
	t.Logf("4 machines (6 s to provision each) provisioned in %s; Metal API calls: %d in all, %.1f per machine for devices",
		elapsed.Round(100*time.Millisecond), stats.Total, float64(deviceCalls)/4)
	g.Expect(slow.Devices(w.project)).To(HaveLen(4))
	g.Expect(float64(deviceCalls)/4).To(BeNumerically("<=", 10), "polling backs off")
}
