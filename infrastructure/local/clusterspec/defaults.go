package clusterspec

import (
	"k8s.io/utils/ptr"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// DefaultDatacenterConfig sets on dc the defaults its CRD's schema sets in the API server, so
// that a spec file is checked as the API server will hold it: both control plane processes on,
// the embedded registry as the image mirror. A LocalMachineConfig has no defaults.
func DefaultDatacenterConfig(dc *infrav1.LocalDatacenterConfig) {
	if dc.Spec.ControllerManager == nil {
		dc.Spec.ControllerManager = ptr.To(true)
	}
	if dc.Spec.Scheduler == nil {
		dc.Spec.Scheduler = ptr.To(true)
	}
	if dc.Spec.ImageMirror == "" {
		dc.Spec.ImageMirror = infrav1.DefaultImageMirror
	}
}
