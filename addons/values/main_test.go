package values

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as its own render worker, as cmd/flotilla's main does.
func TestMain(m *testing.M) {
	RunWorkerIfRequested()
	os.Exit(m.Run())
}
