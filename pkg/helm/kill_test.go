package helm

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// helperEnv makes the test binary run helperMain instead of the tests: a process that installs
// a release and waits, to be killed.
const helperEnv = "FLOTILLA_HELM_TEST_HELPER"

// helperMain installs the release described by the environment with Wait, which never ends on
// a cluster without controllers: the test kills it while Helm's record says pending-install.
func helperMain() int {
	kubeconfig, err := base64.StdEncoding.DecodeString(os.Getenv(helperEnv + "_KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e := &Engine{ChartCache: os.Getenv(helperEnv + "_CACHE")}
	_, err = e.InstallOrUpgrade(context.Background(), cfg, Release{
		Name: "killed", Namespace: os.Getenv(helperEnv + "_NAMESPACE"), Wait: true, Timeout: 5 * time.Minute,
		Chart: ChartRef{RepoURL: os.Getenv(helperEnv + "_REPO"), Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true},
	})
	fmt.Fprintln(os.Stderr, "install returned:", err)
	return 1
}

// TestAnInstallWhoseProcessWasKilledConverges kills a process in the middle of an install (the
// release is pending-install, its objects applied, Helm waiting) and runs the install again
// from this process: it converges, without a second release or a second revision.
func TestAnInstallWhoseProcessWasKilledConverges(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "killed")
	repoURL := "oci://" + ociHost + "/killed/hello"

	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(),
		helperEnv+"=install",
		helperEnv+"_KUBECONFIG="+base64.StdEncoding.EncodeToString(env.Kubeconfig),
		helperEnv+"_CACHE="+t.TempDir(),
		helperEnv+"_NAMESPACE="+ns,
		helperEnv+"_REPO="+repoURL,
	)
	helper.Stderr = os.Stderr
	g.Expect(helper.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- helper.Wait() }()

	g.Eventually(func(g Gomega) {
		g.Expect(releaseSecrets(g, ctx, ns, "killed")).To(ConsistOf(
			HaveField("Labels", HaveKeyWithValue("status", "pending-install"))))
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "killed-config"}, &corev1.ConfigMap{})).To(Succeed())
	}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(helper.Process.Kill()).To(Succeed())
	g.Expect(<-exited).To(HaveOccurred(), "the helper was killed")

	e := newEngine(t)
	res, err := e.InstallOrUpgrade(ctx, cluster, Release{Name: "killed", Namespace: ns,
		Chart: ChartRef{RepoURL: repoURL, Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal("deployed"))
	g.Expect(res.Revision).To(Equal(1), "the killed install is done again, not followed by an upgrade")
	g.Expect(e.Stats().Recoveries).To(Equal(int64(1)))
	secrets := releaseSecrets(g, ctx, ns, "killed")
	g.Expect(secrets).To(HaveLen(1), "one revision for one install")
	res, err = e.InstallOrUpgrade(ctx, cluster, Release{Name: "killed", Namespace: ns,
		Chart: ChartRef{RepoURL: repoURL, Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
}
