package gitops

import (
	"context"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Setup registers the GitOpsConfig reconciler with mgr. Repositories reached by URL are
// fetched into <home>/gitops (home is $FLOTILLA_HOME).
func Setup(_ context.Context, mgr ctrl.Manager, home string) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(FieldOwner),
		CacheDir:  filepath.Join(home, "gitops"),
		ClientAs: ImpersonatingClients(mgr.GetConfig(), ctrlclient.Options{
			Scheme: mgr.GetScheme(),
			Mapper: mgr.GetRESTMapper(),
		}),
	}
	return r.SetupWithManager(mgr)
}
