package helm

import (
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/pkg/helm/releasestore"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// TestAGzipBombReleaseRecordIsRefusedWithBoundedMemory plants, in the namespace of an installed
// release, a forged record of its next revision: 700 KiB of gzip that Helm's own driver would
// inflate to 700 MiB, on every read. Every engine call reading the release fails naming the
// Secret and allocating a small part of that; once the Secret is deleted the release upgrades.
func TestAGzipBombReleaseRecordIsRefusedWithBoundedMemory(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "bomb")
	e := newEngine(t)
	rel := Release{Name: "web", Namespace: ns, Registry: registryconn.Config{PlainHTTP: true},
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/bomb/hello", Version: "0.1.0"}}
	_, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())

	bomb := charttest.ReleaseRecordSecret(ns, "web", 2, charttest.GzipBombRecord(700<<20))
	g.Expect(env.Client.Create(ctx, bomb)).To(Succeed())

	rel.Values = map[string]any{"greeting": "changed"}
	for name, call := range map[string]func() error{
		"InstallOrUpgrade": func() error { _, err := e.InstallOrUpgrade(ctx, cluster, rel); return err },
		"Get":              func() error { _, err := e.Get(ctx, cluster, "web", ns); return err },
		"Diff":             func() error { _, err := e.Diff(ctx, cluster, rel); return err },
		"Uninstall":        func() error { return e.Uninstall(ctx, cluster, "web", ns) },
	} {
		var err error
		allocated := allocatedBy(func() { err = call() })
		g.Expect(err).To(MatchError(releasestore.ErrReleaseRecordTooLarge), name)
		g.Expect(err.Error()).To(ContainSubstring("kubectl -n "+ns+" delete secret "+bomb.Name), name)
		g.Expect(allocated).To(BeNumerically("<", 64<<20), name+": bytes allocated")
	}

	g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bomb.Name, Namespace: ns}})).To(Succeed())
	res, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded))
}

// allocatedBy is how many bytes of heap f allocated (this process's, so not in parallel).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
