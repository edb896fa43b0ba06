package bench

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/addons/values"
	"github.com/flotilla-dev/flotilla/infrastructure/inmemory"
)

// TestMain discards the logs of the libraries the benchmarks drive: the table is their output.
// Started as the in-memory provider's process (BenchmarkInMemory's manager runs it with this
// binary), it is that process instead.
func TestMain(m *testing.M) {
	values.RunWorkerIfRequested()
	inmemory.RunProcessIfRequested()
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
