package gitops

import (
	"context"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Setup registers the GitOpsConfig reconciler with mgr. Repositories reached by URL are
// fetched into <home>/gitops (home is $FLOTILLA_HOME).
func Setup(_ context.Context, mgr ctrl.Manager, home string) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(FieldOwner),
		CacheDir:  filepath.Join(home, "gitops"),
	}
	return r.SetupWithManager(mgr)
}
