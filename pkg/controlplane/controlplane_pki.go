package controlplane

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-dev/flotilla/pkg/pki"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// ensurePKI creates what is missing or no longer fits under pki/ and writes the kubeconfigs, and
// returns the CA. kube-apiserver's serving certificate holds the node network's gateway too when
// st has one. When everything is in place it only reads and parses files. A process whose
// files changed is restarted by Ensure, which puts a digest of each process's input files in its
// environment.
func ensurePKI(cfg Config, l layout, st state, server string) (*pki.KeyPair, error) {
	ca, _, err := pki.EnsureCA(l.pki(caCert), l.pki(caKey), "flotilla-"+cfg.Name+"-ca", cfg.CA)
	if err != nil {
		return nil, fmt.Errorf("ensuring the CA: %w", err)
	}
	// etcd trusts a CA of its own, which signs nothing but etcd's certificates and kube-apiserver's
	// etcd client: the cluster's CA also signs the certificates of users (manager identities,
	// kubelets), none of whom may talk to etcd.
	etcdCA, _, err := pki.EnsureCA(l.pki(etcdCACert), l.pki(etcdCAKey), "flotilla-"+cfg.Name+"-etcd-ca", nil)
	if err != nil {
		return nil, fmt.Errorf("ensuring etcd's CA: %w", err)
	}
	dns, ips, err := pki.APIServerSANs(cfg.Host, cfg.ServiceClusterIPRange)
	if err != nil {
		return nil, err
	}
	realNodes := cfg.RealNodes != nil && st.nodeNetwork().IsValid()
	if realNodes {
		// Real nodes dial the gateway, and kubelet's kubeconfig after its TLS bootstrap
		// keeps only the address, not a server name to verify instead.
		ips = append(ips, net.ParseIP(nodeGateway(st.nodeNetwork())).To4())
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1).To4()}
	serving := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	certs := []struct {
		// signer is the CA that signs the certificate: ca unless set.
		signer    *pki.KeyPair
		cert, key string
		req       pki.CertRequest
		// kubeconfig names the user whose kubeconfig embeds this certificate, if any.
		kubeconfig string
	}{
		{nil, apiserverCert, apiserverKey, pki.CertRequest{CommonName: "kube-apiserver", DNSNames: dns, IPs: ips, Usages: serving}, ""},
		// etcd dials itself (its gRPC gateway) with its serving certificate, and its peer
		// certificate serves the peer port and dials it: both need both usages.
		{etcdCA, etcdServerCert, etcdServerKey, pki.CertRequest{CommonName: "etcd", DNSNames: []string{"localhost"}, IPs: loopback, Usages: append(serving, x509.ExtKeyUsageClientAuth)}, ""},
		{etcdCA, etcdPeerCert, etcdPeerKey, pki.CertRequest{CommonName: "etcd-peer", DNSNames: []string{"localhost"}, IPs: loopback, Usages: append(serving, x509.ExtKeyUsageClientAuth)}, ""},
		{etcdCA, etcdClientCert, etcdClientKey, pki.CertRequest{CommonName: "kube-apiserver-etcd-client", Usages: client}, ""},
		{nil, adminCert, adminKey, pki.CertRequest{CommonName: adminCommonName, Organizations: []string{mastersGroup}, Usages: client}, adminUser},
		{nil, controllerMgrCert, controllerMgrKey, pki.CertRequest{CommonName: controllerMgrUser, Usages: client}, "kube-controller-manager"},
		{nil, schedulerCert, schedulerKey, pki.CertRequest{CommonName: schedulerUser, Usages: client}, "kube-scheduler"},
	}
	if realNodes {
		certs = append(certs, struct {
			signer     *pki.KeyPair
			cert, key  string
			req        pki.CertRequest
			kubeconfig string
		}{nil, kubeletClientCert, kubeletClientKey, pki.CertRequest{CommonName: KubeletClientUser, Usages: client}, ""})
	}
	for _, c := range certs {
		signer := ca
		if c.signer != nil {
			signer = c.signer
		}
		kp, _, err := pki.EnsureCert(signer, l.pki(c.cert), l.pki(c.key), c.req)
		if err != nil {
			return nil, fmt.Errorf("ensuring %s: %w", c.cert, err)
		}
		if c.kubeconfig == "" {
			continue
		}
		data, err := pki.Kubeconfig(cfg.Name, server, ca.CertPEM, userName(c.kubeconfig), kp)
		if err != nil {
			return nil, err
		}
		if _, err := writeIfChanged(l.kubeconfig(c.kubeconfig), data); err != nil {
			return nil, err
		}
	}
	if _, _, err := pki.EnsureServiceAccountKey(l.pki(saKey), l.pki(saPub)); err != nil {
		return nil, fmt.Errorf("ensuring the service account key: %w", err)
	}
	return ca, nil
}

// userName is the name of a kubeconfig's user entry.
func userName(user string) string {
	if user == adminUser {
		return adminCommonName
	}
	return user
}

// writeIfChanged writes data to path (0600) unless the file already holds it.
func writeIfChanged(path string, data []byte) (bool, error) {
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, data) {
		return false, nil
	}
	return true, atomicfile.Write(path, data)
}

// EnsureClientKubeconfig makes path a kubeconfig for user, in groups, of the control plane of
// cfg: a client certificate signed by the control plane's CA, written beside path as <base>.crt
// and <base>.key (base is path without ".kubeconfig"), which the kubeconfig references, and the
// CA, which it embeds. It keeps a certificate that still serves (pki.CertProblem: the same user
// and groups, signed by the current CA, not within pki.RenewBefore of its expiry), so calling it
// again renews the certificate when due, and a client that uses the kubeconfig picks the new one
// up. Files are 0600. It reports whether it wrote anything; Ensure must have run once.
func EnsureClientKubeconfig(cfg Config, path, user string, groups []string) (bool, error) {
	l, st, err := endpoint(cfg)
	if err != nil {
		return false, err
	}
	ca, err := pki.LoadKeyPair(l.pki(caCert), l.pki(caKey))
	if err != nil {
		return false, fmt.Errorf("loading the CA of %s (call Ensure first): %w", l, err)
	}
	base := strings.TrimSuffix(path, ".kubeconfig")
	certFile, keyFile := base+".crt", base+".key"
	req := pki.CertRequest{CommonName: user, Organizations: groups, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	_, renewed, err := pki.EnsureCert(ca, certFile, keyFile, req)
	if err != nil {
		return false, fmt.Errorf("ensuring the client certificate of %s: %w", user, err)
	}
	data, err := pki.KubeconfigWithFiles(cfg.Name, "https://"+hostPort(st.Host, st.APIServerPort), ca.CertPEM, user, filepath.Base(certFile), filepath.Base(keyFile))
	if err != nil {
		return false, err
	}
	written, err := writeIfChanged(path, data)
	return renewed || written, err
}
