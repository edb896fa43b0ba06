package client

import (
	"cmp"
	"context"

	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// ExportPackagesOptions configure ExportPackages.
type ExportPackagesOptions struct {
	// Registry and Repository are the bundle repository (DefaultRegistryAddress and
	// DefaultRegistryRepository when empty).
	Registry, Repository string
	// KubernetesVersions are the Kubernetes versions or minors ("1.36", "v1.36.3") whose newest
	// bundle is exported (publish.DefaultKubernetesMinors when empty).
	KubernetesVersions []string
	// Connection reaches the registry (RegistryConnection).
	Connection registryconn.Config
	// ImageRegistry holds the images in the mirror layout, as BuildImages pushes them (Registry
	// when empty).
	ImageRegistry string
	// SkipImages exports the bundles and charts only.
	SkipImages bool
	// Path is the archive written.
	Path string
}

// ExportPackages writes the newest bundle of each Kubernetes minor, every chart it names and the
// images those charts and real nodes run into one archive (package archive): the first of the
// three steps of an air-gapped install.
func (c *Client) ExportPackages(ctx context.Context, o ExportPackagesOptions) ([]archive.Artifact, error) {
	minors := publish.DefaultKubernetesMinors
	if len(o.KubernetesVersions) > 0 {
		minors = nil
		for _, v := range o.KubernetesVersions {
			m, err := kubeversion.Minor(v)
			if err != nil {
				return nil, err
			}
			minors = append(minors, m)
		}
	}
	o.Registry = cmp.Or(o.Registry, DefaultRegistryAddress)
	res, err := archive.Export(ctx, archive.ExportOptions{
		Registry:         o.Registry,
		Repository:       cmp.Or(o.Repository, DefaultRegistryRepository),
		KubernetesMinors: minors,
		Connection:       o.Connection,
		ImageRegistry:    o.ImageRegistry,
		SkipImages:       o.SkipImages,
		Path:             o.Path,
	})
	return res, withLoginHint(err, o.Registry)
}

// ImportPackages pushes an archive of ExportPackages into a registry, below an optional path
// prefix (o.Registry is host[:port][/prefix]), which then serves as the management cluster's
// registry mirror, once the archive verifies against its bundles (archive.Verify; o.PublicKey
// is the home's signing public key when nil), and records the digests of the real nodes' images
// the bundles pin in the home, where the manager pins them from (ociimage.Record).
func (c *Client) ImportPackages(ctx context.Context, o archive.ImportOptions) ([]archive.Artifact, error) {
	conn, err := c.withPushCredential(o.Connection, o.Registry)
	if err != nil {
		return nil, err
	}
	o.Connection = conn
	if o.PublicKey == nil {
		if o.PublicKey, err = c.PublicKey(""); err != nil {
			return nil, err
		}
	}
	res, err := archive.Import(ctx, o)
	if err != nil {
		return res, withLoginHint(err, o.Registry)
	}
	return res, c.recordNodeImages(res)
}

// recordNodeImages records in the home the digests of the images every real node runs among
// imported, as 'flotilla image build' does: the import pushed them because a bundle signed for
// the trusted key pins them, so real nodes of this machine may pull them by those digests.
func (c *Client) recordNodeImages(imported []archive.Artifact) error {
	r := ociimage.Record{}
	for _, upstream := range realnode.Images {
		repository, tag, _, err := ociimage.MirrorPath(upstream)
		if err != nil {
			return err
		}
		for _, a := range imported {
			if a.Kind == archive.KindImage && a.Repository == repository && a.Tag == tag {
				r[upstream] = a.Digest
			}
		}
	}
	if len(r) == 0 {
		return nil
	}
	return ociimage.RecordDigests(ociimage.RecordPath(c.Home), r)
}
