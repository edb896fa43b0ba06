package cmd

import (
	"os"
	"testing"

	"github.com/flotilla-dev/flotilla/addons/values"
)

// TestMain lets the test binary serve as its own render worker, as `flotilla` does: commands
// such as `addons diff` render chart and values templates in workers.
func TestMain(m *testing.M) {
	values.RunWorkerIfRequested()
	os.Exit(m.Run())
}
