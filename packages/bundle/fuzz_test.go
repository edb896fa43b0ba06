package bundle_test

import (
	"reflect"
	"testing"

	"github.com/flotilla-dev/flotilla/packages/bundle"
)

// FuzzDecodeAndVerify feeds arbitrary content and signatures to the bundle decoder and verifier
// (the seeds, in testdata/fuzz/FuzzDecodeAndVerify, are bundles as published, malformed ones,
// and public keys). Nothing may panic; decoded content encodes canonically to content that
// decodes to the same bundle; no arbitrary signature verifies; a bundle's own signature
// verifies it and nothing else.
func FuzzDecodeAndVerify(f *testing.F) {
	key, err := bundle.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content, signature []byte) {
		_, _ = bundle.ParsePublicKey(content)
		_, _ = bundle.ParsePrivateKey(content)
		b, err := bundle.Decode(content)
		if err != nil {
			return
		}
		canonical, err := bundle.Canonical(b)
		if err != nil {
			t.Fatalf("a decoded bundle has no canonical content: %v", err)
		}
		again, err := bundle.Decode(canonical)
		if err != nil {
			t.Fatalf("the canonical content of a decoded bundle does not decode: %v\n%s", err, canonical)
		}
		if !reflect.DeepEqual(b, again) {
			t.Fatalf("the canonical content decodes to another bundle:\n%#v\n%#v", b, again)
		}
		if bundle.Verify(bundle.Signed{Bundle: b, Signature: signature}, &key.PublicKey) == nil {
			t.Fatalf("an arbitrary signature verifies bundle %q", b.Name)
		}
		if b.Validate() != nil {
			return
		}
		signed, err := bundle.Sign(b, key)
		if err != nil {
			t.Fatalf("signing a valid bundle: %v", err)
		}
		if err := bundle.Verify(signed, &key.PublicKey); err != nil {
			t.Fatalf("a bundle's own signature does not verify it: %v", err)
		}
		other := b
		other.Build++
		if bundle.Verify(bundle.Signed{Bundle: other, Signature: signed.Signature}, &key.PublicKey) == nil {
			t.Fatalf("the signature of bundle %q verifies another build", b.Name)
		}
	})
}
