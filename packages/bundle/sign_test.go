package bundle_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/packages/bundle"
)

func sampleBundle() bundle.Bundle {
	return bundle.Bundle{
		Name: "v1-36-2", KubernetesMinor: "1.36", Build: 2,
		Packages: []bundle.Package{{
			Name: "hello-flotilla", Description: "A web app",
			Source: bundle.Source{Registry: "127.0.0.1:5001", Repository: "flotilla/hello-flotilla"},
			Versions: []bundle.Version{{
				Version: "0.1.0",
				Digest:  "sha256:0000000000000000000000000000000000000000000000000000000000000001",
				Schema:  `{"type":"object"}`,
			}},
		}},
	}
}

func TestVerify(t *testing.T) {
	key, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed := func() bundle.Signed {
		s, err := bundle.Sign(sampleBundle(), key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name    string
		signed  func() bundle.Signed
		pub     *ecdsa.PublicKey
		wantErr error
	}{
		{name: "a bundle signed by the trusted key verifies", signed: signed, pub: &key.PublicKey},
		{name: "an unsigned bundle is rejected", pub: &key.PublicKey, wantErr: bundle.ErrUnsigned,
			signed: func() bundle.Signed { return bundle.Signed{Bundle: sampleBundle()} }},
		{name: "a bundle signed by another key is rejected", signed: signed, pub: &other.PublicKey, wantErr: bundle.ErrBadSignature},
		{name: "a changed chart digest is rejected", pub: &key.PublicKey, wantErr: bundle.ErrBadSignature,
			signed: func() bundle.Signed {
				s := signed()
				s.Bundle.Packages[0].Versions[0].Digest = "sha256:0000000000000000000000000000000000000000000000000000000000000002"
				return s
			}},
		{name: "a bundle renamed to a newer build is rejected", pub: &key.PublicKey, wantErr: bundle.ErrBadSignature,
			signed: func() bundle.Signed {
				s := signed()
				s.Bundle.Name, s.Bundle.Build = "v1-36-9", 9
				return s
			}},
		{name: "a changed signature is rejected", pub: &key.PublicKey, wantErr: bundle.ErrBadSignature,
			signed: func() bundle.Signed {
				s := signed()
				s.Signature[len(s.Signature)-1] ^= 0xff
				return s
			}},
		{name: "garbage as a signature is rejected", pub: &key.PublicKey, wantErr: bundle.ErrBadSignature,
			signed: func() bundle.Signed {
				s := signed()
				s.Signature = []byte("not a signature")
				return s
			}},
		{name: "a key of another curve is refused", signed: signed, pub: &p384.PublicKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := bundle.Verify(tt.signed(), tt.pub)
			switch {
			case tt.pub.Curve != elliptic.P256():
				g.Expect(err).To(MatchError(ContainSubstring("not an ECDSA P-256 public key")))
			case tt.wantErr == nil:
				g.Expect(err).NotTo(HaveOccurred())
			default:
				g.Expect(err).To(MatchError(tt.wantErr))
			}
		})
	}
}

func TestKeysRoundTripThroughPEM(t *testing.T) {
	g := NewWithT(t)
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	privPEM, err := bundle.EncodePrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(privPEM)).To(HavePrefix("-----BEGIN PRIVATE KEY-----"))
	pubPEM, err := bundle.EncodePublicKey(&key.PublicKey)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(pubPEM)).To(HavePrefix("-----BEGIN PUBLIC KEY-----"))

	parsedKey, err := bundle.ParsePrivateKey(privPEM)
	g.Expect(err).NotTo(HaveOccurred())
	parsedPub, err := bundle.ParsePublicKey(pubPEM)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := bundle.Sign(sampleBundle(), parsedKey)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, parsedPub)).To(Succeed())

	_, err = bundle.ParsePublicKey(privPEM)
	g.Expect(err).To(HaveOccurred(), "a private key is not a public key")
}

func TestNames(t *testing.T) {
	tests := []struct {
		name, minor string
		build       int
		want        string
		wantErr     bool
	}{
		{name: "a minor and a build make a name", minor: "1.36", build: 3, want: "v1-36-3"},
		{name: "a full version's patch is ignored", minor: "v1.35.2", build: 12, want: "v1-35-12"},
		{name: "build 0 does not exist", minor: "1.36", build: 0, wantErr: true},
		{name: "a minor must be numbers", minor: "1.x", build: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := bundle.Name(tt.minor, tt.build)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			minor, build, err := bundle.ParseName(got)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(build).To(Equal(tt.build))
			g.Expect(bundle.Name(minor, build)).To(Equal(got))
		})
	}
	_, _, err := bundle.ParseName("v1-36-03")
	NewWithT(t).Expect(err).To(HaveOccurred(), "leading zeros would make two names for one build")
}

func TestNewest(t *testing.T) {
	names := []string{"v1-36-2", "v1-36-10", "v1-36-1", "latest", "v1-36-9"}
	tests := []struct {
		name string
		keep int
		want []string
	}{
		{name: "the highest builds are kept, by number rather than by text", keep: 3, want: []string{"v1-36-10", "v1-36-9", "v1-36-2"}},
		{name: "keeping more than there are keeps every bundle name", keep: 9, want: []string{"v1-36-10", "v1-36-9", "v1-36-2", "v1-36-1"}},
		{name: "keeping none keeps none", keep: 0, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(bundle.Newest(names, tt.keep)).To(Equal(tt.want))
		})
	}
}

func TestDecodeIsStrict(t *testing.T) {
	g := NewWithT(t)
	data, err := bundle.Canonical(sampleBundle())
	g.Expect(err).NotTo(HaveOccurred())
	b, err := bundle.Decode(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b).To(Equal(sampleBundle()))
	_, err = bundle.Decode([]byte(`{"name":"v1-36-1","extra":true}`))
	g.Expect(err).To(MatchError(ContainSubstring("unknown field")))
	g.Expect(sampleBundle().Validate()).To(Succeed())
}
