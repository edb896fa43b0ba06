package packet_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/addons/values"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metalsim"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// The tests share one management cluster (a real kube-apiserver and etcd), one Metal API
// simulator and one manager running the Packet reconcilers. Each test works in its own namespace
// and its own Metal project.
var (
	env *testenv.Environment
	sim *metalsim.Server
	// apiURL is the simulator's API root.
	apiURL string
)

const (
	apiKey = "integration-test-key"
	// goodSecret holds apiKey; badSecret a key the simulator refuses.
	goodSecret = "packet-credentials"
	badSecret  = "packet-credentials-wrong"
)

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
	os.Exit(run(m))
}

// run starts the management cluster, the simulator and the manager, runs the tests, and stops
// the manager before the API server (whose stop otherwise waits for the manager's watches).
func run(m *testing.M) int {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		}
	}()
	sim = metalsim.New(metalsim.Options{APIKey: apiKey, QueuedFor: 500 * time.Millisecond, ProvisioningFor: time.Second})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	apiURL = srv.URL + metalsim.BasePath

	ctx := context.Background()
	must(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infrav1.PacketCredentialsNamespace}}))
	for name, key := range map[string]string{goodSecret: apiKey, badSecret: "wrong"} {
		must(env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: name},
			Data:       map[string][]byte{infrav1.PacketAPIKeySecretKey: []byte(key)},
		}))
	}
	_, stop, err := env.StartManager(func(ctx context.Context, mgr ctrl.Manager) error {
		return packet.Setup(ctx, mgr, packet.Options{})
	})
	must(err)
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
	}
	return code
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
