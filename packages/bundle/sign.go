package bundle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

var (
	// ErrUnsigned is returned by Verify for a bundle without a signature.
	ErrUnsigned = errors.New("bundle is not signed")
	// ErrBadSignature is returned by Verify when the signature does not match the bundle's
	// content and the public key: the content was changed, or another key signed it.
	ErrBadSignature = errors.New("bundle signature does not match its content and the public key")
)

// Signed is a bundle with its signature, as it travels in a registry.
type Signed struct {
	Bundle Bundle
	// Signature is the ASN.1 DER ECDSA P-256 signature of SHA-256(Canonical(Bundle)); empty
	// when unsigned.
	Signature []byte
	// Digest is the digest of the OCI manifest the bundle was pulled from or pushed as; empty
	// before a push.
	Digest string
}

// Sign signs the canonical content of b with key, a P-256 private key.
func Sign(b Bundle, key *ecdsa.PrivateKey) (Signed, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return Signed{}, errors.New("signing bundle: the key is not an ECDSA P-256 private key")
	}
	data, err := Canonical(b)
	if err != nil {
		return Signed{}, err
	}
	sum := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return Signed{}, fmt.Errorf("signing bundle %s: %w", b.Name, err)
	}
	return Signed{Bundle: b, Signature: sig}, nil
}

// Verify checks that s.Signature is pub's signature of s.Bundle's canonical content. It returns
// ErrUnsigned or an error wrapping ErrBadSignature otherwise.
func Verify(s Signed, pub *ecdsa.PublicKey) error {
	if len(s.Signature) == 0 {
		return fmt.Errorf("%w: %s", ErrUnsigned, s.Bundle.Name)
	}
	if pub == nil || pub.Curve != elliptic.P256() {
		return errors.New("verifying bundle: the key is not an ECDSA P-256 public key")
	}
	data, err := Canonical(s.Bundle)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pub, sum[:], s.Signature) {
		return fmt.Errorf("%w: %s (key %s)", ErrBadSignature, s.Bundle.Name, Fingerprint(pub))
	}
	return nil
}

// GenerateKey returns a new P-256 signing key.
func GenerateKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a signing key: %w", err)
	}
	return key, nil
}

// EncodePrivateKey returns key as a PEM "PRIVATE KEY" block (PKCS#8).
func EncodePrivateKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey returns pub as a PEM "PUBLIC KEY" block (PKIX).
func EncodePublicKey(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PEM PKCS#8 ("PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY") P-256 key.
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("signing key: no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("signing key: PEM block %q is not a PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("signing key: not an ECDSA P-256 key")
	}
	return ec, nil
}

// ParsePublicKey reads a PEM PKIX ("PUBLIC KEY") P-256 public key.
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("public key: no PEM PUBLIC KEY block")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("public key: not an ECDSA P-256 key")
	}
	return ec, nil
}

// Fingerprint identifies a public key in messages: "sha256:" and the first 16 hex digits of
// the SHA-256 of its PKIX DER encoding.
func Fingerprint(pub *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}
