package cmd

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

func TestImageBuildPushesEveryImageToItsMirrorPath(t *testing.T) {
	g := NewWithT(t)
	home := t.TempDir()
	t.Setenv("FLOTILLA_HOME", home)
	handler, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(handler)
	defer srv.Close()
	registry := strings.TrimPrefix(srv.URL, "http://")

	root := t.TempDir()
	_, _, err = run("image", "build", "--bin-dir", root, "--registry", registry)
	g.Expect(err).To(MatchError(ContainSubstring("run: flotilla binaries build v1.36.3 --bin-dir " + root + " --nodes")))

	dir := filepath.Join(root, "v1.35.4")
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for _, program := range binaries.ImageNames {
		g.Expect(os.WriteFile(filepath.Join(dir, program), []byte("program "+program), 0o755)).To(Succeed())
	}
	out, _, err := run("image", "build", "--bin-dir", root, "--registry", registry, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var built []client.BuiltImage
	g.Expect(json.Unmarshal([]byte(out), &built)).To(Succeed())
	g.Expect(built).To(HaveLen(3))
	g.Expect(built[0].Reference).To(Equal(registry + "/registry.k8s.io/pause:3.10"))
	for _, b := range built {
		ref, err := name.ParseReference(b.Reference, name.Insecure)
		g.Expect(err).NotTo(HaveOccurred())
		desc, err := remote.Head(ref)
		g.Expect(err).NotTo(HaveOccurred(), "%s is in the registry", b.Reference)
		g.Expect(desc.Digest.String()).To(Equal(b.Digest))
	}
	record, err := ociimage.ReadRecord(ociimage.RecordPath(home))
	g.Expect(err).NotTo(HaveOccurred())
	for _, b := range built {
		g.Expect(record).To(HaveKeyWithValue(b.Name, b.Digest), "the digest real nodes pull %s by is recorded in the home", b.Name)
	}

	_, _, err = run("image", "build", "nginx", "--bin-dir", root, "--registry", registry)
	g.Expect(err).To(MatchError(ContainSubstring(`"nginx" is not an image Flotilla builds: use one of pause, coredns, hello-flotilla`)))
}
