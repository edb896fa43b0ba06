//go:build !flotilla_kubeadm

package manager

// kubeadmComponents returns no component: this build leaves out Cluster API's kubeadm providers
// (see kubeadm.go for why and how to include them).
func kubeadmComponents() []Component { return nil }
