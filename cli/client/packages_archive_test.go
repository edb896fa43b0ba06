package client_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// On a machine that got its images from an archive, real nodes pull the pause and CoreDNS the
// signed bundle pins: the import records their digests in the home, as 'flotilla image build'
// does.
func TestAnImportRecordsTheDigestsOfTheNodeImagesItsBundlesPin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	serve := func() string {
		h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
		g.Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	original, mirror := serve(), serve()
	plain := registryconn.Config{PlainHTTP: true}
	pushed := map[string]string{}
	for _, img := range ociimage.Flotilla {
		image, err := random.Image(256, 1)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := ociimage.MirrorReference(original, img.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ociimage.Push(ctx, ref, image)).To(Succeed())
		pushed[img.Name] = must(image.Digest()).String()
	}
	var progress bytes.Buffer
	c := &client.Client{Home: t.TempDir(), Out: &progress}
	_, err := c.Publish(ctx, client.PublishOptions{Registry: original, KubernetesMinors: []string{"1.36"}, Connection: plain, ImageRegistry: original})
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "flotilla-packages.tar")
	_, err = c.ExportPackages(ctx, client.ExportPackagesOptions{Registry: original, KubernetesVersions: []string{"1.36"}, Connection: plain, Path: path})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = c.ImportPackages(ctx, archive.ImportOptions{Path: path, Registry: mirror + "/air-gap", Connection: plain})
	g.Expect(err).NotTo(HaveOccurred(), "verified with the home's public key")
	record, err := ociimage.ReadRecord(ociimage.RecordPath(c.Home))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record).To(Equal(ociimage.Record{realnode.SandboxImage: pushed[realnode.SandboxImage], realnode.DNSImage: pushed[realnode.DNSImage]}))
}
