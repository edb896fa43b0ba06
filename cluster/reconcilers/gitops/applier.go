package gitops

import (
	"fmt"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// RBAC of the applier: the reconciler writes nothing that a repository holds with its own
// identity; it impersonates the applier ServiceAccount of the GitOpsConfig's namespace, and may
// impersonate no one else.
//
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate,resourceNames=flotilla-gitops

// ApplierUser is the user the reconciler applies the specs of a GitOpsConfig in namespace as:
// the ServiceAccount flotillav1.GitOpsApplierServiceAccount of that namespace.
func ApplierUser(namespace string) string {
	return serviceaccount.MakeUsername(namespace, flotillav1.GitOpsApplierServiceAccount)
}

// ImpersonatingClients returns, for Reconciler.ClientAs, clients of the API server of cfg that
// authenticate as cfg does and act as the applier of a namespace (ApplierUser) through
// Kubernetes impersonation: what they may do is what the applier's bindings allow, and the
// webhooks see the applier, not the reconciler, as the requester.
func ImpersonatingClients(cfg *rest.Config, opts ctrlclient.Options) func(namespace string) (ctrlclient.Client, error) {
	return func(namespace string) (ctrlclient.Client, error) {
		as := rest.CopyConfig(cfg)
		as.Impersonate = rest.ImpersonationConfig{UserName: ApplierUser(namespace)}
		c, err := ctrlclient.New(as, opts)
		if err != nil {
			return nil, fmt.Errorf("creating a client acting as %s: %w", ApplierUser(namespace), err)
		}
		return c, nil
	}
}
