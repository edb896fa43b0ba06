package packet_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/devicesim"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// startCAPIManager runs Cluster API's core and kubeadm reconcilers and Flotilla's Cluster
// reconciler (the Packet reconcilers run in the package's manager) until the test ends.
// sshKey is the public key of a throwaway key pair: a PacketMachineConfig takes only public keys.
const sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA/PTutyBcbXNghTZ1PTvpKHkNIVjATBzT+fFLUh46QV test@example.com"

func startCAPIManager(t *testing.T) {
	t.Helper()
	startManager(t, "capi", "kubeadm", "cluster")
}

// startManager runs a manager with components (whose webhooks it registers with the API
// server) until the test ends.
func startManager(t *testing.T, components ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	t.Cleanup(cancel)
	identities, err := env.ManagerIdentities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(ctx, identities, manager.Options{
		Components:                   components,
		HealthProbeBindAddress:       "0",
		MetricsBindAddress:           "0",
		Home:                         t.TempDir(),
		BinRoot:                      binaries.DefaultRoot(),
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	_, stop, err := testenv.RunManager(ctx, m.Manager(), m.Run, testenv.Readiness{Checks: []func() error{m.Ready}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
		// The manager registered Cluster API's webhooks with the API server; with the manager
		// gone they would refuse every CAPI object the package's other tests create.
		removeWebhookConfigurations(t, m.ID())
	})
}

// removeWebhookConfigurations deletes the webhook configurations named name and waits until the
// API server no longer calls them: its view of the configurations lags behind their deletion,
// and until it catches up it refuses a Cluster API Cluster, calling a webhook server that is gone.
func removeWebhookConfigurations(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []ctrlclient.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
	} {
		if err := env.Client.Delete(ctx, obj); ctrlclient.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %T: %v", obj, err)
		}
	}
	probe := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "webhook-probe-"},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: "probe"},
		},
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.Client.Create(ctx, probe.DeepCopy(), ctrlclient.DryRunAll) == nil, nil
	})
	if err != nil {
		t.Errorf("the API server still calls the webhooks of %s: %v", name, env.Client.Create(ctx, probe.DeepCopy(), ctrlclient.DryRunAll))
	}
}

// startBootingSimulator serves a Metal API simulator whose devices boot (package devicesim)
// until the test ends, and returns it with its API root and its device runtime.
func startBootingSimulator(t *testing.T) (*metalsim.Server, string, *devicesim.Runtime) {
	t.Helper()
	devices, err := devicesim.New(devicesim.Options{Dir: t.TempDir(), BinRoot: binaries.DefaultRoot(), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	booting := metalsim.New(metalsim.Options{APIKey: apiKey, QueuedFor: 500 * time.Millisecond, ProvisioningFor: time.Second, Devices: devices})
	srv := httptest.NewServer(booting)
	t.Cleanup(func() {
		srv.Close()
		devices.Close()
	})
	return booting, srv.URL + metalsim.BasePath, devices
}

func TestAPacketClusterBootsItsDevicesFromTheirKubeadmCloudInitBecomesReadyAndDeleteLeavesNothingBehind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startCAPIManager(t)
	booting, url, devices := startBootingSimulator(t)

	ns := env.NewNamespace(t)
	project := string(uuid.NewUUID())
	// What `flotilla create cluster -f metal.yaml` applies: the Packet configs, then the Cluster.
	objs := []ctrlclient.Object{
		&infrav1.PacketDatacenterConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal"},
			Spec: infrav1.PacketDatacenterConfigSpec{
				IdentityRef: &infrav1.PacketClusterIdentityReference{Name: newIdentity(t, ns, url, goodSecret, ns)},
				ProjectID:   project, Metro: "da",
			},
		},
		&infrav1.PacketMachineConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal-cp"},
			Spec:       infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86", SSHAuthorizedKeys: []string{sshKey}},
		},
		&infrav1.PacketMachineConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal-workers"},
			Spec:       infrav1.PacketMachineConfigSpec{Plan: "m3.small.x86"},
		},
		&flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal"},
			Spec: flotillav1.ClusterSpec{
				KubernetesVersion: "1.36",
				ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1, MachineGroupRef: &flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: "metal-cp"}},
				DatacenterRef:     flotillav1.Ref{Kind: packetspec.DatacenterConfigKind, Name: "metal"},
				WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{
					Name: "md-0", Count: 1, Labels: map[string]string{"pool": "a"},
					MachineGroupRef: flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: "metal-workers"},
				}},
			},
		},
	}
	for _, obj := range objs {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}

	// The kubeadm providers create the CA and the admin kubeconfig for the elastic IP.
	var endpoint string
	g.Eventually(func(g Gomega) {
		pc := get(g, &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal"}})
		endpoint = pc.Spec.ControlPlaneEndpoint.Host
		g.Expect(endpoint).NotTo(BeEmpty())
		ca := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal-ca"}})
		g.Expect(ca.Data).To(HaveKey("tls.crt"))
		g.Expect(ca.Data).To(HaveKey("tls.key"))
		kubeconfig := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal-kubeconfig"}})
		cfg, err := clientcmd.Load(kubeconfig.Data["value"])
		g.Expect(err).NotTo(HaveOccurred())
		for _, cluster := range cfg.Clusters {
			g.Expect(cluster.Server).To(Equal("https://" + endpoint + ":6443"))
			g.Expect(cluster.CertificateAuthorityData).To(Equal(ca.Data["tls.crt"]))
		}
	}, time.Minute).Should(Succeed())

	// The first control plane Machine's device holds the elastic IP and runs kubeadm init from
	// its cloud-init, which is exactly the Machine's bootstrap data.
	var cpDevice metal.Device
	g.Eventually(func(g Gomega) {
		var cp []metal.Device
		for _, d := range booting.Devices(project) {
			if d.HasTag(infrav1.PacketControlPlaneTag) {
				cp = append(cp, d)
			}
		}
		g.Expect(cp).To(HaveLen(1))
		cpDevice = cp[0]
		g.Expect(cpDevice.State).To(Equal(metal.DeviceStateActive))
		g.Expect(cpDevice.IPAddresses).To(ContainElement(HaveField("Address", endpoint)), "the control plane device holds the elastic IP")
	}, time.Minute).Should(Succeed())
	g.Expect(cpDevice.Userdata).To(ContainSubstring("kubeadm init"))
	g.Expect(cpDevice.Userdata).To(ContainSubstring("/etc/kubernetes/pki/ca.crt"))
	g.Expect(cpDevice.Userdata).To(ContainSubstring("kubelet=1.36.3-*"))
	g.Expect(cpDevice.Userdata).To(ContainSubstring(sshKey))
	g.Eventually(func(g Gomega) {
		machines := &clusterv1.MachineList{}
		g.Expect(env.Client.List(ctx, machines, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{clusterv1.MachineControlPlaneLabel: ""})).To(Succeed())
		g.Expect(machines.Items).To(HaveLen(1))
		bootstrap := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: *machines.Items[0].Spec.Bootstrap.DataSecretName}})
		g.Expect(string(bootstrap.Data["value"])).To(Equal(cpDevice.Userdata), "the bootstrap data Secret is the device's userdata")
		g.Expect(machines.Items[0].Spec.ProviderID).To(Equal("equinixmetal://" + cpDevice.ID))
	}, time.Minute).Should(Succeed())

	// The device's kubeadm init brings the control plane up; the workers' kubeadm join data
	// follows, their devices join, and the Flotilla Cluster becomes Ready.
	cluster := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal"}}
	g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(get(g, cluster).Status.Conditions, flotillav1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", cond.Reason, cond.Message)
	}, 4*time.Minute, time.Second).Should(Succeed())
	g.Expect(cluster.Status.Phase).To(Equal(flotillav1.ClusterPhaseReady))
	g.Expect(cluster.Status.KubernetesVersion).To(Equal("v1.36.3"))
	g.Expect(cluster.Status.Workers).To(Equal(flotillav1.WorkerStatus{Desired: 1, Ready: 1}))

	// The admin kubeconfig kubeadm's provider wrote reaches the live API server on the elastic
	// IP: it holds what kubeadm init left, and a Ready Node for every Machine, by provider ID.
	kubeconfig := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal-kubeconfig"}})
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig.Data["value"])
	g.Expect(err).NotTo(HaveOccurred())
	workload, err := ctrlclient.New(restConfig, ctrlclient.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workload.Get(ctx, ctrlclient.ObjectKey{Namespace: "kube-system", Name: "kubeadm-config"}, &corev1.ConfigMap{})).To(Succeed())
	machines := &clusterv1.MachineList{}
	g.Expect(env.Client.List(ctx, machines, ctrlclient.InNamespace(ns))).To(Succeed())
	g.Expect(machines.Items).To(HaveLen(2))
	nodes := &corev1.NodeList{}
	g.Expect(workload.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(2))
	for _, m := range machines.Items {
		g.Expect(nodes.Items).To(ContainElement(And(
			HaveField("Spec.ProviderID", m.Spec.ProviderID),
			HaveField("Status.Conditions", ContainElement(And(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue)))),
		)), "Machine %s has a Ready Node", m.Name)
	}
	g.Expect(nodes.Items).To(ContainElement(HaveField("ObjectMeta.Labels", HaveKeyWithValue("pool", "a"))), "the worker group's labels reach its Node")
	g.Expect(devices.Running()).To(HaveLen(2))

	// Deleting the Flotilla Cluster releases every device and the elastic IP, and the devices'
	// processes stop: nothing answers on the endpoint any more.
	g.Expect(env.Client.Delete(ctx, cluster)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(booting.Devices(project)).To(BeEmpty())
		g.Expect(booting.IPReservations(project)).To(BeEmpty())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(cluster), &flotillav1.Cluster{}))).To(BeTrue(), "the Flotilla Cluster is gone")
		g.Expect(devices.Running()).To(BeEmpty(), "every device shut down")
	}, 2*time.Minute).Should(Succeed())
	_, err = net.DialTimeout("tcp", net.JoinHostPort(endpoint, "6443"), time.Second)
	g.Expect(err).To(HaveOccurred(), "no API server is left on the endpoint")
}
