package packages_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

	health := freeAddr(t)
	m, err := manager.New(ctx, e.Config, manager.Options{
		Components:                   []string{"packages"},
		HealthProbeBindAddress:       health,
		MetricsBindAddress:           "0",
		Home:                         t.TempDir(),
		Version:                      "v0.0.0-test",
		SkipControllerNameValidation: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(BeNil()))
	}()
	g.Eventually(func() (int, error) {
		resp, err := http.Get("http://" + health + "/readyz") //nolint:noctx // a test probe
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}, 60*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))

	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Name: m.ID()}, validating)).To(Succeed())
	g.Expect(validating.Webhooks).To(ContainElement(HaveField("Name", "validate.package.packages.flotilla.dev")))

	// The API server calls the webhook: a Package outside a cluster's namespace is refused.
	err = e.Client.Create(ctx, &packagesv1.Package{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec:       packagesv1.PackageSpec{PackageName: "hello"},
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("metadata.namespace"))

	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w9", Namespace: "default"},
		Spec: flotillav1.ClusterSpec{KubernetesVersion: "1.36",
			DatacenterRef: flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"}},
	}
	g.Expect(e.Client.Create(ctx, c)).To(Succeed())
	g.Eventually(func() error {
		return e.Client.Get(ctx, client.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: "w9"}, &packagesv1.PackageBundleController{})
	}, timeout, interval).Should(Succeed())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}
