package controlplane_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// rejected returns the packet count of the last rule (the REJECT) of chain in the filter table
// of program (iptables or ip6tables), failing when the chain does not exist.
func rejected(g *WithT, program, chain string) int {
	out, err := exec.Command(program, "-w", "-t", "filter", "-L", chain, "-v", "-n", "-x").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s chain %s: %s", program, chain, out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.Fields(lines[len(lines)-1])
	g.Expect(last).To(ContainElement("REJECT"), string(out))
	n, err := strconv.Atoi(last[0])
	g.Expect(err).NotTo(HaveOccurred())
	return n
}

// hostAddress is a non-loopback IPv4 address of this machine, "" when it has none.
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestAControlPlaneFetchesNothingOffThisMachine is the attack of a cluster's owner on the
// machine's network: through a Service without selector, Endpoints she writes and
// services/proxy, she has kube-apiserver (root, in the host's network namespace) fetch an
// address beyond the machine. The address is 198.51.100.7 (TEST-NET-2, which nothing answers;
// not 192.0.2.1, this test machine's gateway). Before anything is sent, the test checks that
// the egress rules are there, so a build without them fails without a packet leaving.
func TestAControlPlaneFetchesNothingOffThisMachine(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cfg := controlplane.Config{Name: "egress", Dir: controlplane.ClusterDir(t.TempDir(), "egress"), Binaries: realBinaries(t)}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })
	_, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())

	chain := "FLOTILLA-" + strings.ToUpper(nodenet.ClusterID(cfg.Dir)) + "-OUT"
	before := rejected(g, "iptables", chain)
	rejected(g, "ip6tables", chain)

	kubeconfig, err := controlplane.AdminKubeconfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	client, err := kubernetes.NewForConfig(restConfig)
	g.Expect(err).NotTo(HaveOccurred())
	// No controller manager runs: the ServiceAccount Pods need is the test's to make.
	_, err = client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// service points the Service name, without selector, at address:port, through a Pod whose
	// status (hers to write) claims the address: services/proxy dials Pods' addresses only.
	service := func(name, address string, port int32) {
		pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		pod.Status.PodIP, pod.Status.PodIPs = address, []corev1.PodIP{{IP: address}}
		_, err = client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = client.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: port}}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = client.CoreV1().Endpoints("default").Create(ctx, &corev1.Endpoints{ //nolint:staticcheck // what services/proxy reads
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
				Addresses: []corev1.EndpointAddress{{IP: address, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name}}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: port}},
			}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	proxyGet := func(name string, port int32) (string, error) {
		body, err := client.CoreV1().Services("default").ProxyGet("http", name, strconv.Itoa(int(port)), "/", nil).DoRaw(ctx)
		return string(body), err
	}

	service("lan", "198.51.100.7", 80)
	// kube-apiserver reads Services and Endpoints from its caches: wait until it knows.
	g.Eventually(func() string { body, _ := proxyGet("lan", 80); return body }).
		WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(ContainSubstring("198.51.100.7:80"))
	start := time.Now()
	body, err := proxyGet("lan", 80)
	took := time.Since(start)
	g.Expect(err).To(HaveOccurred())
	g.Expect(body).To(ContainSubstring("198.51.100.7:80"))
	g.Expect(body).To(Or(ContainSubstring("no route to host"), ContainSubstring("network is unreachable")))
	g.Expect(took).To(BeNumerically("<", 3*time.Second), "refused at once, not timed out")
	g.Expect(rejected(g, "iptables", chain)).To(BeNumerically(">", before), "the host's rule rejected the packet")
	t.Logf("services/proxy to 198.51.100.7 refused in %s: %s", took.Round(time.Millisecond), body)

	// An address of this machine itself is still reached: the rule is no blanket ban.
	address := hostAddress()
	if address == "" {
		t.Log("this machine has no non-loopback IPv4 address: the local case is not tried")
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	g.Expect(err).NotTo(HaveOccurred())
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "on this machine") }), ReadHeaderTimeout: time.Second}
	go func() { _ = server.Serve(l) }()
	defer func() { _ = server.Close() }()
	port := int32(l.Addr().(*net.TCPAddr).Port) //nolint:gosec // a TCP port
	service("local", address, port)
	g.Eventually(func() string { body, _ := proxyGet("local", port); return body }).
		WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("on this machine"))
}

// TestPrepareRestoresTheEgressRulesAfterARestartOfTheMachine: a restart of the machine removes
// the cgroup and the rules; the supervisor of the home runs Prepare before it starts
// kube-apiserver again from its record (which fails without the cgroup), and Prepare puts both
// back.
func TestPrepareRestoresTheEgressRulesAfterARestartOfTheMachine(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	cfg := controlplane.Config{Name: "reboot", Dir: controlplane.ClusterDir(t.TempDir(), "reboot"), Binaries: fakeBinaries(t)}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })
	_, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	id := nodenet.ClusterID(cfg.Dir)
	chain := "FLOTILLA-" + strings.ToUpper(id) + "-OUT"
	rejected(g, "iptables", chain)

	g.Expect(nodenet.DeleteEgress(ctx, id)).To(Succeed()) // what the restart leaves
	_, err = exec.Command("iptables", "-w", "-S", chain).CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "the chain is gone")

	g.Expect(controlplane.Prepare(ctx, cfg.Dir)).To(Succeed())
	rejected(g, "iptables", chain)
	rejected(g, "ip6tables", chain)
	g.Expect(controlplane.Prepare(ctx, t.TempDir())).To(Succeed(), "a directory without a control plane is left alone")
}
