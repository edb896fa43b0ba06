package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// ServiceAccountKey is the key pair kube-apiserver signs service account tokens with
// (--service-account-signing-key-file) and verifies them with (--service-account-key-file).
type ServiceAccountKey struct {
	// Key is the private key.
	Key *rsa.PrivateKey
	// PrivatePEM is the private key, PEM encoded (RSA PRIVATE KEY).
	PrivatePEM []byte
	// PublicPEM is the public key, PEM encoded (PUBLIC KEY).
	PublicPEM []byte
}

// NewServiceAccountKey returns a new RSA 2048 service account key pair.
func NewServiceAccountKey() (*ServiceAccountKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, rsaBits)
	if err != nil {
		return nil, fmt.Errorf("generating service account key: %w", err)
	}
	return serviceAccountKey(key)
}

func serviceAccountKey(key *rsa.PrivateKey) (*ServiceAccountKey, error) {
	priv, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	pub, err := EncodePublicKeyPEM(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &ServiceAccountKey{Key: key, PrivatePEM: priv, PublicPEM: pub}, nil
}

// EnsureServiceAccountKey loads the key pair at privateFile and publicFile, or generates and
// writes a new one when either is missing or they do not match. It reports whether it wrote.
func EnsureServiceAccountKey(privateFile, publicFile string) (*ServiceAccountKey, bool, error) {
	if sa, err := loadServiceAccountKey(privateFile, publicFile); err == nil {
		return sa, false, nil
	}
	sa, err := NewServiceAccountKey()
	if err != nil {
		return nil, false, err
	}
	if err := atomicfile.Write(privateFile, sa.PrivatePEM); err != nil {
		return nil, false, err
	}
	if err := atomicfile.Write(publicFile, sa.PublicPEM); err != nil {
		return nil, false, err
	}
	return sa, true, nil
}

func loadServiceAccountKey(privateFile, publicFile string) (*ServiceAccountKey, error) {
	privPEM, err := os.ReadFile(privateFile)
	if err != nil {
		return nil, err
	}
	signer, err := ParsePrivateKeyPEM(privPEM)
	if err != nil {
		return nil, err
	}
	key, ok := signer.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an RSA key", privateFile)
	}
	sa, err := serviceAccountKey(key)
	if err != nil {
		return nil, err
	}
	pubPEM, err := os.ReadFile(publicFile)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(pubPEM, sa.PublicPEM) {
		return nil, fmt.Errorf("%s does not match %s", publicFile, privateFile)
	}
	return sa, nil
}

// EnsureCA makes certFile and keyFile hold a CA. With want set, that CA is written unless the
// files already hold it; otherwise the CA on disk is kept when it parses and is not expired, and a
// new one named commonName is generated when not. It reports whether it wrote.
func EnsureCA(certFile, keyFile, commonName string, want *KeyPair) (*KeyPair, bool, error) {
	current, loadErr := LoadKeyPair(certFile, keyFile)
	if want != nil {
		if loadErr == nil && bytes.Equal(current.Cert.Raw, want.Cert.Raw) {
			return current, false, nil
		}
		if want.Cert == nil || !want.Cert.IsCA {
			return nil, false, errors.New("the given CA certificate is not a CA")
		}
		if err := want.WriteFiles(certFile, keyFile); err != nil {
			return nil, false, err
		}
		return want, true, nil
	}
	if loadErr == nil && current.Cert.IsCA && time.Now().Before(current.Cert.NotAfter) {
		return current, false, nil
	}
	if loadErr != nil && !errors.Is(loadErr, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("the CA in %s cannot be used (%w); restore it, or remove the control plane directory to start over", certFile, loadErr)
	}
	ca, err := NewCA(commonName)
	if err != nil {
		return nil, false, err
	}
	if err := ca.WriteFiles(certFile, keyFile); err != nil {
		return nil, false, err
	}
	return ca, true, nil
}

// EnsureCert makes certFile and keyFile hold a certificate for req signed by ca: it keeps the one
// on disk unless CertProblem finds a reason to replace it. It reports whether it wrote.
func EnsureCert(ca *KeyPair, certFile, keyFile string, req CertRequest) (*KeyPair, bool, error) {
	if current, err := LoadKeyPair(certFile, keyFile); err == nil && CertProblem(current.Cert, ca.Cert, req, time.Now()) == "" {
		return current, false, nil
	}
	kp, err := NewCert(ca, req)
	if err != nil {
		return nil, false, err
	}
	if err := kp.WriteFiles(certFile, keyFile); err != nil {
		return nil, false, err
	}
	return kp, true, nil
}

// CertProblem returns why cert no longer serves req (signed by ca, at time now), or "" when it
// does: not signed by ca, another subject, a missing name or usage, expired or due for renewal.
func CertProblem(cert, ca *x509.Certificate, req CertRequest, now time.Time) string {
	switch {
	case cert.CheckSignatureFrom(ca) != nil:
		return "not signed by the CA"
	case cert.Subject.CommonName != req.CommonName:
		return "common name differs"
	case !sameStrings(cert.Subject.Organization, req.Organizations):
		return "organizations differ"
	case now.Before(cert.NotBefore):
		return "not valid yet"
	case now.Add(RenewBefore).After(cert.NotAfter) && cert.NotAfter.Before(ca.NotAfter):
		return "expires soon"
	}
	for _, name := range req.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return "DNS name " + name + " missing"
		}
	}
	for _, ip := range req.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return "IP address " + ip.String() + " missing"
		}
	}
	for _, usage := range req.Usages {
		if !slices.Contains(cert.ExtKeyUsage, usage) {
			return "key usage missing"
		}
	}
	return ""
}

// APIServerSANs returns the DNS names and IP addresses kube-apiserver's serving certificate needs
// when it listens on host with the given service range: the in-cluster names of the kubernetes
// Service, localhost, the loopback addresses, host, and the first address of serviceCIDR (the
// ClusterIP of the kubernetes Service). A host name instead of an IP is added to the DNS names.
func APIServerSANs(host, serviceCIDR string) ([]string, []net.IP, error) {
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	serviceIP, err := FirstServiceIP(serviceCIDR)
	if err != nil {
		return nil, nil, err
	}
	ips = append(ips, serviceIP)
	if host != "" {
		if ip := net.ParseIP(host); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if !slices.Contains(dns, host) {
			dns = append(dns, host)
		}
	}
	return dns, ips, nil
}

// FirstServiceIP returns the first usable address of a service range: the ClusterIP
// kube-apiserver gives the kubernetes Service ("10.96.0.0/12" -> 10.96.0.1).
func FirstServiceIP(serviceCIDR string) (net.IP, error) {
	prefix, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return nil, fmt.Errorf("service range %q: %w", serviceCIDR, err)
	}
	first := prefix.Masked().Addr().Next()
	if !first.IsValid() || !prefix.Contains(first) {
		return nil, fmt.Errorf("service range %q has no usable address", serviceCIDR)
	}
	return net.IP(first.AsSlice()), nil
}

func sameStrings(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
