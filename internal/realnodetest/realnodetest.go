package realnodetest

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// Binaries returns the binaries of version (a Supported version) with the node programs and the
// programs of Flotilla's images, or skips t, saying what is missing: root, the host's programs
// (realnode.Prerequisites) or the build.
func Binaries(t testing.TB, version string) binaries.Set {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real nodes make namespaces, cgroups and networks: run the tests as root")
	}
	if err := realnode.Prerequisites(); err != nil {
		t.Skipf("%v", err)
	}
	set, err := binaries.Find("", version)
	if err == nil {
		err = set.Check(append(append([]string(nil), binaries.NodeNames...), binaries.ImageNames...)...)
	}
	if err != nil {
		t.Skipf("the node programs of %s are not built (make node-binaries K8S_VERSION=%s): %v", version, version, err)
	}
	return set
}

// Mirror serves an image registry on loopback until t ends, pushes Flotilla's images (built from
// the programs of set) to it under their mirror names, and returns its host:port.
func Mirror(t testing.TB, set binaries.Set) string {
	t.Helper()
	handler, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, img := range ociimage.Flotilla {
		image, err := ociimage.Build(img, set.Path(img.Program), "")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ociimage.MirrorReference(addr, img.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ociimage.Push(context.Background(), ref, image); err != nil {
			t.Fatal(err)
		}
	}
	return addr
}
