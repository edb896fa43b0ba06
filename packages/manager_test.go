package packages_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/manager"
)

// TestTheFlotillaManagerRunsThePackagesComponent runs `flotilla manager --components packages`
// as the binary does (manager.New) against an API server of its own: the component sets up, its
// webhook is registered and called, and a Cluster gets its PackageBundleController.
func TestTheFlotillaManagerRunsThePackagesComponent(t *testing.T) {
	g := NewWithT(t)
	e, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(e.Stop()).To(Succeed()) }()
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	defer cancel()

	identities, err := e.ManagerIdentities(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := manager.New(ctx, identities, manager.Options{
		Components:                   []string{"packages"},
		HealthProbeBindAddress:       "0",
		MetricsBindAddress:           "0",
		Home:                         t.TempDir(),
		Version:                      "v0.0.0-test",
		SkipControllerNameValidation: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	_, stop, err := testenv.RunManager(ctx, m.Manager(), m.Run, testenv.Readiness{Checks: []func() error{m.Ready}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(stop()).To(Succeed()) }()

	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(e.Client.Get(ctx, ctrlclient.ObjectKey{Name: m.ID()}, validating)).To(Succeed())
	g.Expect(validating.Webhooks).To(ContainElement(HaveField("Name", "validate.package.packages.flotilla.dev")))

	// The API server calls the webhook: a Package outside a cluster's namespace is refused (once
	// the API server's view of the webhook configurations has caught up with the registration).
	outside := &packagesv1.Package{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec:       packagesv1.PackageSpec{PackageName: "hello"},
	}
	g.Eventually(func() error {
		return e.Client.Create(ctx, outside.DeepCopy(), ctrlclient.DryRunAll)
	}, timeout, interval).Should(Satisfy(apierrors.IsInvalid))
	err = e.Client.Create(ctx, outside)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("metadata.namespace"))

	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w9", Namespace: "default"},
		Spec: flotillav1.ClusterSpec{KubernetesVersion: "1.36",
			DatacenterRef: flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"}},
	}
	g.Expect(e.Client.Create(ctx, c)).To(Succeed())
	g.Eventually(func() error {
		return e.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: "w9"}, &packagesv1.PackageBundleController{})
	}, timeout, interval).Should(Succeed())
}
