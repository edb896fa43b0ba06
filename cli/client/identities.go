package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// The identities of the manager of a local cluster.
//
// The manager never runs with the cluster's admin kubeconfig. It runs each of its identities
// (config.ManagerIdentities: its own and one per component) with a client certificate that
// names the identity's user and groups, those of the ServiceAccount flotilla-system/<identity>,
// signed by the cluster's CA, which the CLI keeps with the cluster's data. The CLI, which holds
// the admin kubeconfig, applies the roles generated for each identity and their bindings
// (config.InstallManagerRBAC) before it starts the manager, so the roles always match the binary
// that runs it. Certificates are renewed a month before they expire: by the CLI whenever it
// starts a manager, and by the running manager itself (KeepManagerIdentitiesRenewed), which
// picks renewed files up without a restart.

// managerIdentitiesDir holds the kubeconfigs, certificates and keys of the identities of the
// manager of local cluster name.
func (c *Client) managerIdentitiesDir(name string) string {
	return filepath.Join(c.clusterDir(name), "manager", "identities")
}

// identityKubeconfig is the kubeconfig of identity in dir.
func identityKubeconfig(dir, identity string) string {
	return filepath.Join(dir, identity+".kubeconfig")
}

// EnsureManagerIdentities makes dir hold a kubeconfig, client certificate and key (0600) for
// every identity of the manager, for the control plane whose data is in clusterDir, signed by
// its CA; it keeps what is still valid and renews what is due. It reports whether it wrote
// anything.
func EnsureManagerIdentities(clusterDir, dir string) (bool, error) {
	ids, err := config.ManagerIdentities()
	if err != nil {
		return false, err
	}
	cfg := controlplane.Config{Name: filepath.Base(clusterDir), Dir: clusterDir}
	changed := false
	for _, id := range ids {
		wrote, err := controlplane.EnsureClientKubeconfig(cfg, identityKubeconfig(dir, id), config.IdentityUser(id), config.IdentityGroups())
		if err != nil {
			return false, fmt.Errorf("issuing the identity %s of the manager: %w", id, err)
		}
		changed = changed || wrote
	}
	return changed, nil
}

// ManagerIdentities returns the REST config of each identity of the manager from the
// kubeconfigs EnsureManagerIdentities wrote into dir: what `flotilla manager --identities`
// runs with.
func ManagerIdentities(dir string) func(identity string) (*rest.Config, error) {
	return func(identity string) (*rest.Config, error) {
		path := identityKubeconfig(dir, identity)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("no kubeconfig for identity %s: %w", identity, err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", path, err)
		}
		return cfg, nil
	}
}

// identityRenewInterval is how often a running manager checks its certificates: they are
// renewed pki.RenewBefore (30 days) before they expire.
const identityRenewInterval = time.Hour

// KeepManagerIdentitiesRenewed runs EnsureManagerIdentities now and every hour until ctx ends,
// so that a manager that runs for a year does not outlive its certificates; the clients of the
// manager read renewed files within minutes.
func KeepManagerIdentitiesRenewed(ctx context.Context, clusterDir, dir string) {
	log := ctrl.LoggerFrom(ctx).WithName("identities")
	wait.UntilWithContext(ctx, func(context.Context) {
		renewed, err := EnsureManagerIdentities(clusterDir, dir)
		switch {
		case err != nil:
			log.Error(err, "Renewing the certificates of the manager's identities")
		case renewed:
			log.Info("Renewed the certificates of the manager's identities", "dir", dir)
		}
	}, identityRenewInterval)
}
