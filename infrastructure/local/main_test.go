package local_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/flotilla-dev/flotilla/addons/values"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// env is the management cluster of the tests: a real kube-apiserver and etcd with Cluster API's
// and Flotilla's CRDs.
var env *testenv.Environment

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
	// The managers' logs go to stderr with FLOTILLA_TEST_LOG=1 (verbosity: its value minus one).
	logger := logr.Discard()
	if v := os.Getenv("FLOTILLA_TEST_LOG"); v != "" {
		var verbosity int
		_, _ = fmt.Sscan(v, &verbosity)
		logger = funcr.New(func(prefix, args string) {
			fmt.Fprintln(os.Stderr, prefix, args)
		}, funcr.Options{LogTimestamp: true, Verbosity: verbosity - 1})
	}
	ctrl.SetLogger(logger)
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}
