package values

import (
	"context"
	"strings"
	"testing"
)

// FuzzRender renders arbitrary templates through Render, in render workers, as the manager does
// (the seeds, in testdata/fuzz/FuzzRender, are the templates of the tests and docs and runaway
// ones). A template either renders canonical values of at most MaxRenderedSize, or fails with
// an error about the valuesTemplate; a worker that dies otherwise than at one of its limits is
// a bug. The templates run in the workers, whose coverage the fuzzer does not see: it mutates
// the seeds blind.
func FuzzRender(f *testing.F) {
	data := testData()
	f.Fuzz(func(t *testing.T, template string) {
		out, err := Render(context.Background(), template, data)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "valuesTemplate") {
				t.Fatalf("an error that does not name the valuesTemplate: %v", err)
			}
			if strings.Contains(msg, "stopped unexpectedly") {
				t.Fatalf("the render worker crashed: %v", err)
			}
			return
		}
		if len(out) > MaxRenderedSize {
			t.Fatalf("%d bytes of values, more than %d", len(out), MaxRenderedSize)
		}
		values, err := Parse(out)
		if err != nil {
			t.Fatalf("rendered values that do not parse: %v\n%s", err, out)
		}
		again, err := Encode(values)
		if err != nil || again != out {
			t.Fatalf("rendered values that are not canonical (%v):\n%s\n%s", err, out, again)
		}
	})
}
