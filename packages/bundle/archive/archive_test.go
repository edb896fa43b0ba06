package archive

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// The curated catalog published to one registry is exported with that registry only, and, once
// that registry is gone, imported into another below a prefix: there the bundle verifies with
// the publisher's key and every chart it names is found by its digest and its version, read
// through the mirror routing the manager uses.
func TestTheCatalogTravelsToAMirrorWithTheOriginalGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	original, stopOriginal := charttest.StartRegistry()
	plain := registryconn.Config{PlainHTTP: true}
	published, err := publish.Publish(ctx, publish.Options{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Key: key, Connection: plain})
	g.Expect(err).NotTo(HaveOccurred())

	path := filepath.Join(t.TempDir(), "flotilla-packages.tar")
	start := time.Now()
	exported, err := Export(ctx, ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Connection: plain, Path: path})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("exported %d artifacts in %s", len(exported), time.Since(start))
	g.Expect(exported).To(HaveLen(len(published.Charts) + 1))
	g.Expect(exported[0]).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(KindBundle), "Repository": Equal("flotilla"), "Tag": Equal(published.Bundles[0].Name)}))
	stopOriginal()

	mirror, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer mirror.Close()
	conn := registryconn.Config{Username: mirror.Username, Password: mirror.Password, CAData: mirror.CAPEM}
	start = time.Now()
	imported, err := Import(ctx, ImportOptions{Path: path, Registry: mirror.Host + "/copies", Connection: conn})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("imported %d artifacts in %s", len(imported), time.Since(start))
	g.Expect(imported).To(HaveLen(len(exported)))

	routed := registryconn.Config{PlainHTTP: true, Mirror: &registryconn.Mirror{Registry: mirror.Host + "/copies", Connection: conn}}
	host, repo, via := routed.Route(original, "flotilla")
	opts, err := bundle.RemoteOptions(via)
	g.Expect(err).NotTo(HaveOccurred())
	names, err := bundle.List(ctx, host, repo, "1.36", opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(Equal([]string{published.Bundles[0].Name}))
	s, err := bundle.Pull(ctx, host+"/"+repo+":"+names[0], opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(Succeed(), "the signature holds in the mirror")
	for _, p := range s.Bundle.Packages {
		for _, v := range p.Versions {
			host, repo, _ := routed.Route(p.Source.Registry, p.Source.Repository)
			for _, ref := range []string{host + "/" + repo + "@" + v.Digest, host + "/" + repo + ":" + v.Version} {
				r, err := name.ParseReference(ref)
				g.Expect(err).NotTo(HaveOccurred())
				desc, err := remote.Get(r, append(opts, remote.WithContext(ctx))...)
				g.Expect(err).NotTo(HaveOccurred(), ref)
				g.Expect(desc.Digest.String()).To(Equal(v.Digest), ref)
			}
		}
	}
}

func TestImportRefusesWhatIsNotAnExport(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "evil.tar")
	f, err := os.Create(path)
	g.Expect(err).NotTo(HaveOccurred())
	tw := tar.NewWriter(f)
	g.Expect(tw.WriteHeader(&tar.Header{Name: "../../etc/evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})).To(Succeed())
	_, err = tw.Write([]byte("x"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tw.Close()).To(Succeed())
	g.Expect(f.Close()).To(Succeed())

	_, err = Import(context.Background(), ImportOptions{Path: path, Registry: "127.0.0.1:1"})
	g.Expect(err).To(MatchError(ContainSubstring(`holds "../../etc/evil", which is not a file of an OCI image layout`)))
	_, err = os.Stat(filepath.Join(dir, "..", "..", "etc", "evil"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())

	_, err = Import(context.Background(), ImportOptions{Path: path, Registry: "https://m.example"})
	g.Expect(err).To(MatchError(ContainSubstring("without a scheme")))
}
