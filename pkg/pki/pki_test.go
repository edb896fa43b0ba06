package pki

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
)

func newTestCA(t *testing.T) *KeyPair {
	t.Helper()
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestNewCA(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)

	g.Expect(ca.Cert.IsCA).To(BeTrue())
	g.Expect(ca.Cert.KeyUsage & x509.KeyUsageCertSign).NotTo(BeZero())
	g.Expect(ca.Cert.Subject.CommonName).To(Equal("test-ca"))
	g.Expect(ca.Key).To(BeAssignableToTypeOf(&rsa.PrivateKey{}))
	g.Expect(ca.Cert.NotAfter).To(BeTemporally("~", time.Now().Add(CAValidity), time.Hour))

	parsed, err := ParseKeyPair(ca.CertPEM, ca.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parsed.Cert.Equal(ca.Cert)).To(BeTrue())
}

func TestAPIServerServingCertificate(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)
	dns, ips, err := APIServerSANs("192.168.1.20", "10.96.0.0/12")
	g.Expect(err).NotTo(HaveOccurred())

	kp, err := NewServingCert(ca, "kube-apiserver", dns, ips)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(kp.Cert.DNSNames).To(ConsistOf("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"))
	var got []string
	for _, ip := range kp.Cert.IPAddresses {
		got = append(got, ip.String())
	}
	g.Expect(got).To(ConsistOf("127.0.0.1", "::1", "10.96.0.1", "192.168.1.20"))
	g.Expect(kp.Cert.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}))
	g.Expect(kp.Cert.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature))
	g.Expect(kp.Cert.IsCA).To(BeFalse())
	g.Expect(kp.Key).To(BeAssignableToTypeOf(&ecdsa.PrivateKey{}))

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"kubernetes.default.svc", "localhost", "127.0.0.1", "10.96.0.1", "192.168.1.20"} {
		_, err := kp.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}
	_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"})
	g.Expect(err).To(HaveOccurred())
}

func TestAdminClientCertificate(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)

	kp, err := NewClientCert(ca, "flotilla-admin", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(kp.Cert.Subject.CommonName).To(Equal("flotilla-admin"))
	g.Expect(kp.Cert.Subject.Organization).To(Equal([]string{"system:masters"}))
	g.Expect(kp.Cert.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}))
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestAPIServerSANs(t *testing.T) {
	tests := []struct {
		name    string
		host    string
		cidr    string
		wantDNS string
		wantIP  string
		wantErr string
	}{
		{name: "the first service address is included", host: "127.0.0.1", cidr: "10.96.0.0/12", wantIP: "10.96.0.1"},
		{name: "an unmasked range still gives its first address", host: "127.0.0.1", cidr: "10.0.0.7/24", wantIP: "10.0.0.1"},
		{name: "an IPv6 range gives an IPv6 address", host: "127.0.0.1", cidr: "fd00:10:96::/108", wantIP: "fd00:10:96::1"},
		{name: "a host address is added", host: "10.1.2.3", cidr: "10.96.0.0/12", wantIP: "10.1.2.3"},
		{name: "a host name is added to the DNS names", host: "cp.example.com", cidr: "10.96.0.0/12", wantDNS: "cp.example.com"},
		{name: "a malformed range is refused", host: "127.0.0.1", cidr: "10.96.0.0", wantErr: "service range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dns, ips, err := APIServerSANs(tt.host, tt.cidr)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantDNS != "" {
				g.Expect(dns).To(ContainElement(tt.wantDNS))
			}
			if tt.wantIP != "" {
				g.Expect(ips).To(ContainElement(WithTransform(net.IP.String, Equal(tt.wantIP))))
			}
		})
	}
}

func TestCertProblem(t *testing.T) {
	ca := newTestCA(t)
	otherCA := newTestCA(t)
	req := CertRequest{CommonName: "kube-apiserver", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	kp, err := NewCert(ca, req)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	tests := []struct {
		name string
		ca   *x509.Certificate
		req  func(CertRequest) CertRequest
		now  time.Time
		want string
	}{
		{name: "a fresh certificate for the same request is fine", ca: ca.Cert, now: now, want: ""},
		{name: "a certificate from another CA is replaced", ca: otherCA.Cert, now: now, want: "not signed by the CA"},
		{name: "a new IP address is missing", ca: ca.Cert, now: now, req: func(r CertRequest) CertRequest {
			r.IPs = append(r.IPs, net.ParseIP("10.0.0.9"))
			return r
		}, want: "IP address 10.0.0.9 missing"},
		{name: "a new DNS name is missing", ca: ca.Cert, now: now, req: func(r CertRequest) CertRequest {
			r.DNSNames = append(r.DNSNames, "kubernetes")
			return r
		}, want: "DNS name kubernetes missing"},
		{name: "another group is another identity", ca: ca.Cert, now: now, req: func(r CertRequest) CertRequest {
			r.Organizations = []string{"system:masters"}
			return r
		}, want: "organizations differ"},
		{name: "a client usage is missing from a serving certificate", ca: ca.Cert, now: now, req: func(r CertRequest) CertRequest {
			r.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			return r
		}, want: "key usage missing"},
		{name: "a certificate close to expiry is renewed", ca: ca.Cert, now: now.Add(CertValidity - RenewBefore/2), want: "expires soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := req
			if tt.req != nil {
				r = tt.req(r)
			}
			g.Expect(CertProblem(kp.Cert, tt.ca, r, tt.now)).To(Equal(tt.want))
		})
	}
}

func TestEnsureWritesOnceWithPrivateModes(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "pki")
	path := func(name string) string { return filepath.Join(dir, name) }
	req := CertRequest{CommonName: "flotilla-admin", Organizations: []string{"system:masters"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}

	ca, wrote, err := EnsureCA(path("ca.crt"), path("ca.key"), "test-ca", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	admin, wrote, err := EnsureCert(ca, path("admin.crt"), path("admin.key"), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	sa, wrote, err := EnsureServiceAccountKey(path("sa.key"), path("sa.pub"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())

	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(6), "no temporary file is left behind")
	for _, e := range entries {
		info, err := e.Info()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), e.Name())
	}
	info, err := os.Stat(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)))

	// A second round keeps everything.
	ca2, wrote, err := EnsureCA(path("ca.crt"), path("ca.key"), "test-ca", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeFalse())
	g.Expect(ca2.CertPEM).To(Equal(ca.CertPEM))
	admin2, wrote, err := EnsureCert(ca2, path("admin.crt"), path("admin.key"), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeFalse())
	g.Expect(admin2.CertPEM).To(Equal(admin.CertPEM))
	sa2, wrote, err := EnsureServiceAccountKey(path("sa.key"), path("sa.pub"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeFalse())
	g.Expect(sa2.PublicPEM).To(Equal(sa.PublicPEM))
}

func TestEnsureCAWithAGivenCAReissuesTheLeaves(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	req := CertRequest{CommonName: "kube-apiserver", DNSNames: []string{"localhost"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	first, _, err := EnsureCA(path("ca.crt"), path("ca.key"), "first", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = EnsureCert(first, path("apiserver.crt"), path("apiserver.key"), req)
	g.Expect(err).NotTo(HaveOccurred())

	moved := newTestCA(t) // the CA of a cluster restored somewhere else
	ca, wrote, err := EnsureCA(path("ca.crt"), path("ca.key"), "ignored", moved)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	g.Expect(ca.Cert.Equal(moved.Cert)).To(BeTrue())
	onDisk, err := LoadKeyPair(path("ca.crt"), path("ca.key"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onDisk.Cert.Equal(moved.Cert)).To(BeTrue())

	leaf, wrote, err := EnsureCert(ca, path("apiserver.crt"), path("apiserver.key"), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue(), "a leaf of the old CA is reissued")
	g.Expect(leaf.Cert.CheckSignatureFrom(moved.Cert)).To(Succeed())
}

func TestEnsureCARefusesToReplaceAnUnreadableCA(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("garbage"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "ca.key"), []byte("garbage"), 0o600)).To(Succeed())

	_, _, err := EnsureCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "x", nil)
	g.Expect(err).To(MatchError(ContainSubstring("cannot be used")))
}

func TestKubeconfigParsesAndVerifiesAgainstTheCA(t *testing.T) {
	g := NewWithT(t)
	ca := newTestCA(t)
	admin, err := NewClientCert(ca, "flotilla-admin", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())

	data, err := Kubeconfig("demo", "https://127.0.0.1:6443", ca.CertPEM, "flotilla-admin", admin)
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := clientcmd.Load(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.CurrentContext).To(Equal("flotilla-admin@demo"))
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rest.Host).To(Equal("https://127.0.0.1:6443"))

	clientCert, err := ParseCertPEM(rest.CertData)
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(rest.CAData)).To(BeTrue())
	_, err = clientCert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ParseKeyPair(rest.CertData, rest.KeyData)
	g.Expect(err).NotTo(HaveOccurred(), "the embedded key belongs to the embedded certificate")
}
