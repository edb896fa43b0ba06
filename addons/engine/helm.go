package engine

import (
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/kube"
)

// HelmFieldManager is the server-side apply field manager Helm writes a release's objects as:
// helm's kube.ManagedFieldsManager when set, else the program's base name (as Helm decides).
// Drift correction restores fields as this manager, so later upgrades own them without
// conflicts.
func HelmFieldManager() string {
	if kube.ManagedFieldsManager != "" {
		return kube.ManagedFieldsManager
	}
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
}
