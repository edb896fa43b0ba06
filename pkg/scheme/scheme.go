package scheme

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	capiaddonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// AddToScheme adds every API group Flotilla works with to s.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme,
		capiaddonsv1.AddToScheme,
		clusterctlv1.AddToScheme,
		bootstrapv1.AddToScheme,
		kubeadmcontrolplanev1.AddToScheme,
		flotillav1.AddToScheme,
		infrav1.AddToScheme,
		controlplanev1.AddToScheme,
		addonsv1.AddToScheme,
		packagesv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return fmt.Errorf("building scheme: %w", err)
		}
	}
	return nil
}

// New returns a new Scheme holding every API group Flotilla works with.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
