package releasestore

import (
	"testing"
)

// fuzzLimit is the record size limit while fuzzing: small, so that the fuzzer reaches it.
const fuzzLimit = 64 << 10

// FuzzDecodeRelease decodes arbitrary release record data, as a hostile workload cluster may
// store it (the seeds, in testdata/fuzz/FuzzDecodeRelease, are records Helm wrote, with and
// without gzip, gzip bombs and broken ones). Decoding never panics, never returns a release
// from more than the limit, and a record that decodes within the limit decodes the same with a
// larger one.
func FuzzDecodeRelease(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeRelease(data, fuzzLimit)
		if got.size > fuzzLimit {
			t.Fatalf("decoded %d bytes, more than the limit %d", got.size, fuzzLimit)
		}
		if err != nil {
			if got.Release != nil {
				t.Fatalf("a release and an error: %v", err)
			}
			return
		}
		if got.Release == nil {
			t.Fatal("neither a release nor an error")
		}
		again, err := decodeRelease(data, 4*fuzzLimit)
		if err != nil || again.size != got.size {
			t.Fatalf("decodes in %d bytes under the limit, but not the same under a larger one (%d bytes, %v)", got.size, again.size, err)
		}
	})
}
