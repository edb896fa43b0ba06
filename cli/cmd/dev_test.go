package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// syncBuffer is an io.Writer the command and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// metalAPI runs `flotilla dev metal-api` with args (and --home home) in-process until the
// returned function is called, which waits for the command to return and gives its error. A test
// that ends before calling it still waits for the command, so no device outlives the test.
func metalAPI(t *testing.T, home string, args ...string) (baseURL string, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	out, errOut := &syncBuffer{}, &syncBuffer{}
	root := NewRootCmd(genericiooptions.IOStreams{In: os.Stdin, Out: out, ErrOut: errOut})
	root.SetArgs(append([]string{"dev", "metal-api", "--listen", addr, "--home", home, "--bin-dir", binaries.DefaultRoot(),
		"--queued-for", "0s", "--provisioning-for", "0s"}, args...))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() {
		_ = stop()
		t.Logf("metal-api output:\n%s%s", out, errOut)
	})
	NewWithT(t).Eventually(out.String, 10*time.Second, 50*time.Millisecond).Should(ContainSubstring("serving http://" + addr))
	return "http://" + addr + metalsim.BasePath, stop
}

// bootDevice creates a device whose userdata is Cluster API's kubeadm init cloud-init for an
// endpoint on a reserved elastic IP, and assigns it that IP, as the Packet provider does. It
// returns the endpoint and the cluster CA.
func bootDevice(ctx context.Context, g Gomega, baseURL string) (endpoint string, ca *x509.CertPool) {
	api, err := metal.New(metal.Options{BaseURL: baseURL, APIKey: "k"})
	g.Expect(err).NotTo(HaveOccurred())
	ip, err := api.EnsureIPReservation(ctx, "p", "flotilla:endpoint:test", metal.IPReservationRequest{Type: "public_ipv4", Quantity: 1, Metro: "da"})
	g.Expect(err).NotTo(HaveOccurred())
	endpoint = net.JoinHostPort(ip.Address, "6443")

	certificates := secret.NewCertificatesForInitialControlPlane(&bootstrapv1.ClusterConfiguration{})
	g.Expect(certificates.Generate()).To(Succeed())
	userdata, err := cloudinit.NewInitControlPlane(&cloudinit.ControlPlaneInput{
		Certificates: certificates,
		ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: dev
controlPlaneEndpoint: ` + endpoint + `
kubernetesVersion: v1.36.3
`,
		InitConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: '{{ v1.local_hostname }}'
`,
	})
	g.Expect(err).NotTo(HaveOccurred())
	d, _, err := api.EnsureDevice(ctx, "p", "flotilla:machine:test", metal.DeviceCreateRequest{
		Hostname: "dev-cp", Plan: "c3.small.x86", Metro: "da", OperatingSystem: "ubuntu_24_04", Userdata: string(userdata),
	})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = api.AssignIP(ctx, d.ID, ip.Address+"/32")
	g.Expect(err).NotTo(HaveOccurred())

	ca = x509.NewCertPool()
	g.Expect(ca.AppendCertsFromPEM(certificates.GetByPurpose(secret.ClusterCA).KeyPair.Cert)).To(BeTrue())
	return endpoint, ca
}

// answersTLS reports whether a server with a certificate of ca answers on endpoint.
func answersTLS(endpoint string, ca *x509.CertPool) bool {
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(context.Background(), "tcp", endpoint)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func TestDevMetalAPIBootsDevicesAndStopsThemWhenItEnds(t *testing.T) {
	if _, err := binaries.Find(binaries.DefaultRoot(), "v1.36.3"); err != nil {
		t.Skipf("a booted device runs the v1.36.3 control plane binaries: %v", err)
	}
	g := NewWithT(t)
	home := t.TempDir()
	baseURL, stop := metalAPI(t, home, "--api-key", "k")
	endpoint, ca := bootDevice(t.Context(), g, baseURL)

	g.Eventually(func() bool { return answersTLS(endpoint, ca) }, 2*time.Minute, 500*time.Millisecond).Should(BeTrue(),
		"the device's kube-apiserver serves the endpoint with the cloud-init's CA")
	g.Expect(filepath.Join(home, "metal-devices")).To(BeADirectory())

	g.Expect(stop()).To(Succeed())
	g.Expect(answersTLS(endpoint, ca)).To(BeFalse(), "the command stopped the device's processes before it returned")
	g.Expect(os.ReadDir(filepath.Join(home, "metal-devices"))).To(BeEmpty())
}

func TestDevMetalAPIWithoutBootKeepsDevicesInert(t *testing.T) {
	g := NewWithT(t)
	home := t.TempDir()
	baseURL, stop := metalAPI(t, home, "--api-key", "k", "--boot=false")
	defer func() { g.Expect(stop()).To(Succeed()) }()
	endpoint, ca := bootDevice(t.Context(), g, baseURL)

	api, err := metal.New(metal.Options{BaseURL: baseURL, APIKey: "k"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (string, error) {
		devices, err := api.ListDevices(t.Context(), "p", "")
		if err != nil || len(devices) != 1 {
			return "", err
		}
		return devices[0].State, nil
	}, 10*time.Second, 100*time.Millisecond).Should(Equal("active"))
	g.Consistently(func() bool { return answersTLS(endpoint, ca) }, 3*time.Second, 500*time.Millisecond).Should(BeFalse())
	g.Expect(filepath.Join(home, "metal-devices")).NotTo(BeAnExistingFile())
}
