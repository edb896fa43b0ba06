package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

const (
	// CAValidity is how long a generated CA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// CertValidity is how long a generated leaf certificate is valid.
	CertValidity = 365 * 24 * time.Hour
	// RenewBefore is how long before its expiry a leaf certificate is replaced.
	RenewBefore = 30 * 24 * time.Hour
	// rsaBits is the size of RSA keys (the CA and the service account key).
	rsaBits = 2048
	// backdate makes a new certificate valid a little before now, for clocks that disagree.
	backdate = 5 * time.Minute
)

// KeyPair is a certificate and its private key, parsed and PEM encoded.
type KeyPair struct {
	// Cert is the parsed certificate.
	Cert *x509.Certificate
	// Key is the private key.
	Key crypto.Signer
	// CertPEM is the certificate, PEM encoded (CERTIFICATE).
	CertPEM []byte
	// KeyPEM is the key, PEM encoded (RSA PRIVATE KEY or EC PRIVATE KEY).
	KeyPEM []byte
}

// NewCA returns a self-signed certificate authority with an RSA 2048 key.
func NewCA(commonName string) (*KeyPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, rsaBits)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	return newKeyPair(der, key)
}

// CertRequest describes a leaf certificate.
type CertRequest struct {
	// CommonName is the subject CN: the user name of a client certificate.
	CommonName string
	// Organizations is the subject O: the groups of a client certificate.
	Organizations []string
	// DNSNames and IPs are the subject alternative names of a serving certificate.
	DNSNames []string
	IPs      []net.IP
	// Usages are the extended key usages: x509.ExtKeyUsageServerAuth, ExtKeyUsageClientAuth.
	Usages []x509.ExtKeyUsage
}

// NewServingCert returns a certificate for a TLS server, signed by ca, valid for the given names.
func NewServingCert(ca *KeyPair, commonName string, dnsNames []string, ips []net.IP) (*KeyPair, error) {
	return NewCert(ca, CertRequest{CommonName: commonName, DNSNames: dnsNames, IPs: ips, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

// NewClientCert returns a client certificate signed by ca for the Kubernetes user commonName in
// the given groups (e.g. "system:masters").
func NewClientCert(ca *KeyPair, commonName string, organizations ...string) (*KeyPair, error) {
	return NewCert(ca, CertRequest{CommonName: commonName, Organizations: organizations, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// NewCert returns a leaf certificate with an ECDSA P-256 key, signed by ca.
func NewCert(ca *KeyPair, req CertRequest) (*KeyPair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("signing a certificate: no CA")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %s: %w", req.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(CertValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           req.Usages,
		BasicConstraintsValid: true,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPs,
		AuthorityKeyId:        ca.Cert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %s: %w", req.CommonName, err)
	}
	return newKeyPair(der, key)
}

// ParseKeyPair parses PEM encoded certificate and key and checks that they belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("the private key does not match the certificate")
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// LoadKeyPair reads and parses a certificate file and its key file.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", certFile, err)
	}
	return kp, nil
}

// WriteFiles writes the certificate and the key, each with mode 0600.
func (k *KeyPair) WriteFiles(certFile, keyFile string) error {
	if err := atomicfile.Write(keyFile, k.KeyPEM); err != nil {
		return err
	}
	return atomicfile.Write(certFile, k.CertPEM)
}

// ParseCertPEM parses the first CERTIFICATE block of data.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parsing certificate: %w", err)
			}
			return cert, nil
		}
	}
	return nil, errors.New("parsing certificate: no CERTIFICATE PEM block")
}

// ParsePrivateKeyPEM parses an RSA, EC or PKCS#8 private key.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parsing private key: no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("parsing private key: unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("parsing private key: %T cannot sign", key)
	}
	return signer, nil
}

// EncodePrivateKeyPEM encodes an RSA key as RSA PRIVATE KEY and an ECDSA key as EC PRIVATE KEY.
func EncodePrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("encoding EC key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	default:
		return nil, fmt.Errorf("encoding private key: unsupported type %T", key)
	}
}

// EncodePublicKeyPEM encodes a public key as PUBLIC KEY (PKIX).
func EncodePublicKeyPEM(key crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func newKeyPair(der []byte, key crypto.Signer) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing new certificate: %w", err)
	}
	keyPEM, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial, nil
}

// keyID is the subject key identifier of a public key: a SHA-256 of its encoding, truncated.
func keyID(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}
