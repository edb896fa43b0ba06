package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// etcdPorts reads etcd's client and peer ports from the control plane's state.json.
func etcdPorts(t *testing.T, dir string) (client, peer int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Client int `json:"etcdClientPort"`
		Peer   int `json:"etcdPeerPort"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st.Client, st.Peer
}

// tlsClient is an HTTPS client that trusts the CA in caFile and presents the certificate in
// certFile (none when empty).
func tlsClient(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// status returns the HTTP status of a request, or the error that kept it from having one.
func status(client *http.Client, method, url string) string {
	req, err := http.NewRequest(method, url, strings.NewReader("{}"))
	if err != nil {
		return err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	_ = resp.Body.Close()
	return resp.Status
}

// expectEtcdRefusesStrangers checks, as an attacker on this machine, that etcd's peer port talks
// raft to its own peer certificate only, and its client port to kube-apiserver's etcd client
// certificate only: not to an unprivileged local user, not to a TLS client without a
// certificate, and not to one holding a certificate of the cluster's CA (every user of the
// cluster has one).
func expectEtcdRefusesStrangers(t *testing.T, g *WithT, dir string) {
	t.Helper()
	clientPort, peerPort := etcdPorts(t, dir)
	pkiFile := func(name string) string { return filepath.Join(dir, "pki", name) }
	peerURL := "https://127.0.0.1:" + strconv.Itoa(peerPort)
	clientURL := "https://127.0.0.1:" + strconv.Itoa(clientPort)

	// An unprivileged local user speaking plain HTTP to the peer port, as raft peers did.
	for _, path := range []string{"/members", "/raft/probing"} {
		// curl prints 000 when no HTTP response came (etcd closes the connection).
		out, _ := exec.Command("runuser", "-u", "nobody", "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
			"--max-time", "5", "http://127.0.0.1:"+strconv.Itoa(peerPort)+path).Output()
		g.Expect(string(out)).To(Equal("000"), "plain HTTP to %s as nobody gets no answer", path)
	}

	// The peer port answers its own member, so the refusals below are etcd's.
	peer := tlsClient(t, pkiFile("etcd-ca.crt"), pkiFile("etcd-peer.crt"), pkiFile("etcd-peer.key"))
	g.Expect(status(peer, http.MethodGet, peerURL+"/members")).To(Equal("200 OK"))
	apiserver := tlsClient(t, pkiFile("etcd-ca.crt"), pkiFile("apiserver-etcd-client.crt"), pkiFile("apiserver-etcd-client.key"))
	g.Expect(status(apiserver, http.MethodGet, clientURL+"/health")).To(Equal("200 OK"))

	// A TLS client without a certificate, and one with the admin's (signed by the cluster's CA).
	anonymous := tlsClient(t, pkiFile("etcd-ca.crt"), "", "")
	admin := tlsClient(t, pkiFile("etcd-ca.crt"), pkiFile("admin.crt"), pkiFile("admin.key"))
	for name, client := range map[string]*http.Client{"no certificate": anonymous, "the admin's certificate": admin} {
		for _, req := range []struct{ method, url string }{
			{http.MethodGet, peerURL + "/members"},
			{http.MethodGet, peerURL + "/raft/probing"},
			{http.MethodPost, peerURL + "/raft"},
			{http.MethodPost, peerURL + "/raft/snapshot"},
			{http.MethodGet, clientURL + "/health"},
			{http.MethodPost, clientURL + "/v3/kv/range"},
		} {
			g.Expect(status(client, req.method, req.url)).To(Or(ContainSubstring("certificate"), ContainSubstring("tls:")),
				"%s %s with %s", req.method, req.url, name)
		}
	}
}

func TestEtcdTalksOnlyToItsPeerAndKubeAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cfg := controlplane.Config{Name: "etcdpeers", Dir: controlplane.ClusterDir(t.TempDir(), "etcdpeers"), Binaries: realBinaries(t)}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })
	_, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())

	expectEtcdRefusesStrangers(t, g, cfg.Dir)
}

// TestEnsureSecuresTheEtcdOfAnOlderVersion starts a control plane whose directory an older
// Flotilla made: etcd's data recorded a plain HTTP peer URL, etcd's certificates were signed by
// the cluster's CA, and neither etcd's CA nor its peer certificate exists. Ensure issues what is
// missing, restarts etcd and kube-apiserver, and the cluster serves its data.
func TestEnsureSecuresTheEtcdOfAnOlderVersion(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Minute)
	defer cancel()
	cfg := controlplane.Config{Name: "etcdupgrade", Dir: controlplane.ClusterDir(t.TempDir(), "etcdupgrade"), Binaries: realBinaries(t)}
	t.Cleanup(func() { _ = controlplane.Delete(quietContext(), cfg.Dir) })
	_, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())
	g.Expect(controlplane.Stop(ctx, cfg.Dir)).To(Succeed())

	// The older version's PKI: etcd's certificates from the cluster's CA, no etcd CA, no peer
	// certificate.
	pkiFile := func(name string) string { return filepath.Join(cfg.Dir, "pki", name) }
	for _, name := range []string{"etcd-ca.crt", "etcd-ca.key", "etcd-peer.crt", "etcd-peer.key"} {
		g.Expect(os.Remove(pkiFile(name))).To(Succeed())
	}
	ca, err := pki.LoadKeyPair(pkiFile("ca.crt"), pkiFile("ca.key"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"etcd-server", "apiserver-etcd-client"} {
		old, err := pki.LoadKeyPair(pkiFile(name+".crt"), pkiFile(name+".key"))
		g.Expect(err).NotTo(HaveOccurred())
		reissued, err := pki.NewCert(ca, pki.CertRequest{CommonName: old.Cert.Subject.CommonName, DNSNames: old.Cert.DNSNames, IPs: old.Cert.IPAddresses, Usages: old.Cert.ExtKeyUsage})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(reissued.WriteFiles(pkiFile(name+".crt"), pkiFile(name+".key"))).To(Succeed())
	}
	// The older version's data: a member whose peer URL is plain HTTP.
	clientPort, peerPort := etcdPorts(t, cfg.Dir)
	g.Expect(os.RemoveAll(filepath.Join(cfg.Dir, "etcd"))).To(Succeed())
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	old := exec.CommandContext(ctx, cfg.Binaries.Path(binaries.Etcd), "--name=flotilla", "--data-dir="+filepath.Join(cfg.Dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=flotilla="+peerURL, "--initial-cluster-state=new", "--log-level=warn")
	g.Expect(old.Start()).To(Succeed())
	g.Eventually(func() string { return status(http.DefaultClient, http.MethodGet, peerURL+"/members") }).
		WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Equal("200 OK"), "the older etcd talks raft to anyone")
	g.Expect(old.Process.Kill()).To(Succeed())
	_ = old.Wait()

	_, err = controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())
	etcdCA, err := pki.LoadKeyPair(pkiFile("etcd-ca.crt"), pkiFile("etcd-ca.key"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"etcd-server", "etcd-peer", "apiserver-etcd-client"} {
		kp, err := pki.LoadKeyPair(pkiFile(name+".crt"), pkiFile(name+".key"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kp.Cert.CheckSignatureFrom(etcdCA.Cert)).To(Succeed(), fmt.Sprintf("%s is signed by etcd's CA", name))
	}
	expectEtcdRefusesStrangers(t, g, cfg.Dir)
}
