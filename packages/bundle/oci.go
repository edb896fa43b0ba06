package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// Media types and annotations of a bundle artifact.
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.flotilla.bundle.v1"
	// ContentMediaType is the media type of the manifest's one layer, the bundle's canonical
	// JSON content.
	ContentMediaType = "application/vnd.flotilla.bundle.v1+json"
	// EmptyConfigMediaType is the OCI empty config ("{}") of artifacts.
	EmptyConfigMediaType = "application/vnd.oci.empty.v1+json"

	// SignatureAnnotation holds the base64 (standard encoding) of Signed.Signature.
	SignatureAnnotation = "dev.flotilla.bundle.signature"
	// KeyAnnotation holds the Fingerprint of the signing key's public half (for messages only:
	// verification never trusts it).
	KeyAnnotation = "dev.flotilla.bundle.key"
	// KubernetesMinorAnnotation holds the bundle's Kubernetes minor, such as "1.36".
	KubernetesMinorAnnotation = "dev.flotilla.bundle.kubernetes-minor"
	// TitleAnnotation is the OCI title of the content layer.
	TitleAnnotation = "org.opencontainers.image.title"
)

// maxContentSize bounds what Pull reads of a bundle's content.
const maxContentSize = 16 << 20

// ErrNameMismatch is returned by Pull when a tag holds a bundle of another name (a bundle
// re-tagged to pass for a newer one).
var ErrNameMismatch = errors.New("bundle name does not match its tag")

var emptyConfig = []byte("{}")

// artifact is the manifest and blobs Push writes for s.
type artifact struct {
	manifest []byte
	content  []byte
}

func newArtifact(s Signed) (artifact, error) {
	content, err := Canonical(s.Bundle)
	if err != nil {
		return artifact{}, err
	}
	annotations := map[string]string{KubernetesMinorAnnotation: s.Bundle.KubernetesMinor}
	if len(s.Signature) > 0 {
		annotations[SignatureAnnotation] = base64.StdEncoding.EncodeToString(s.Signature)
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  ArtifactType,
		Config:        descriptor(EmptyConfigMediaType, emptyConfig, nil),
		Layers:        []v1.Descriptor{descriptor(ContentMediaType, content, map[string]string{TitleAnnotation: s.Bundle.Name + ".json"})},
		Annotations:   annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return artifact{}, fmt.Errorf("encoding the manifest of bundle %s: %w", s.Bundle.Name, err)
	}
	return artifact{manifest: raw, content: content}, nil
}

func descriptor(mediaType string, data []byte, annotations map[string]string) v1.Descriptor {
	sum := sha256.Sum256(data)
	return v1.Descriptor{
		MediaType:   types.MediaType(mediaType),
		Size:        int64(len(data)),
		Digest:      v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])},
		Annotations: annotations,
	}
}

// rawManifest is a remote.Taggable over manifest bytes.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// ManifestDigest is the digest of the manifest Push writes for s ("sha256:...").
func ManifestDigest(s Signed) (string, error) {
	a, err := newArtifact(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(a.manifest)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Push writes s to ref, "<registry>/<repository>:<tag>", as an OCI artifact. The tag must be
// the bundle's name ("host/repo" alone gets it). s may be unsigned (tests of verification need
// such bundles); publishers sign first.
func Push(ctx context.Context, ref string, s Signed, opts ...remote.Option) error {
	tag, err := bundleTag(ref, s.Bundle.Name)
	if err != nil {
		return err
	}
	a, err := newArtifact(s)
	if err != nil {
		return err
	}
	opts = append(opts, remote.WithContext(ctx))
	for _, blob := range []struct {
		data      []byte
		mediaType string
	}{{emptyConfig, EmptyConfigMediaType}, {a.content, ContentMediaType}} {
		if err := remote.WriteLayer(tag.Context(), static.NewLayer(blob.data, types.MediaType(blob.mediaType)), opts...); err != nil {
			return fmt.Errorf("pushing bundle %s to %s: %w", s.Bundle.Name, tag.Context(), err)
		}
	}
	if err := remote.Put(tag, rawManifest(a.manifest), opts...); err != nil {
		return fmt.Errorf("pushing bundle %s to %s: %w", s.Bundle.Name, tag, err)
	}
	return nil
}

// bundleTag parses ref as a tag, appending name when ref has none, and checks that the tag is
// name.
func bundleTag(ref, bundleName string) (name.Tag, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		if tag, err = name.NewTag(ref+":"+bundleName, name.StrictValidation); err != nil {
			return name.Tag{}, fmt.Errorf("bundle reference %q: %w", ref, err)
		}
	}
	if tag.TagStr() != bundleName {
		return name.Tag{}, fmt.Errorf("bundle reference %q: the tag must be the bundle's name %s", ref, bundleName)
	}
	return tag, nil
}

// Pull reads the bundle at ref ("<registry>/<repository>:<bundle name>" or "...@sha256:...").
// It checks the artifact's shape, the content's digest (go-containerregistry verifies blobs)
// and, for a tag, that the bundle inside has the tag's name (ErrNameMismatch). It does not
// verify the signature: call Verify with the trusted public key.
func Pull(ctx context.Context, ref string, opts ...remote.Option) (Signed, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle reference %q: %w", ref, err)
	}
	opts = append(opts, remote.WithContext(ctx))
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return Signed{}, fmt.Errorf("pulling bundle %s: %w", ref, err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return Signed{}, fmt.Errorf("bundle %s: reading the manifest: %w", ref, err)
	}
	layer, err := contentLayer(m)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", ref, err)
	}
	blob, err := remote.Layer(r.Context().Digest(layer.Digest.String()), opts...)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", ref, err)
	}
	rc, err := blob.Compressed()
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: fetching the content: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	content, err := io.ReadAll(rc) // size checked by contentLayer; the digest is checked at EOF
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: fetching the content: %w", ref, err)
	}
	tag := ""
	if t, ok := r.(name.Tag); ok {
		tag = t.TagStr()
	}
	return signedFrom(m, content, desc.Digest.String(), ref, tag)
}

// FromImage reads the bundle of the artifact img (from an OCI image layout, say) as Pull reads
// one from a registry: its shape, its content's digest and, when tag is not empty, that the
// bundle has that name (ErrNameMismatch). It does not verify the signature.
func FromImage(img v1.Image, tag string) (Signed, error) {
	digest, err := img.Digest()
	if err != nil {
		return Signed{}, fmt.Errorf("reading a bundle: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", digest, err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return Signed{}, fmt.Errorf("bundle %s: reading the manifest: %w", digest, err)
	}
	layer, err := contentLayer(m)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", digest, err)
	}
	blob, err := img.LayerByDigest(layer.Digest)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", digest, err)
	}
	rc, err := blob.Compressed()
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: reading the content: %w", digest, err)
	}
	defer func() { _ = rc.Close() }()
	content, err := io.ReadAll(io.LimitReader(rc, maxContentSize+1))
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: reading the content: %w", digest, err)
	}
	if sum := sha256.Sum256(content); int64(len(content)) != layer.Size || "sha256:"+hex.EncodeToString(sum[:]) != layer.Digest.String() {
		return Signed{}, fmt.Errorf("bundle %s: the content is not the %d bytes of digest %s its manifest names", digest, layer.Size, layer.Digest)
	}
	return signedFrom(m, content, digest.String(), digest.String(), tag)
}

// signedFrom decodes the bundle of manifest m with content, whose manifest has digest and was
// read from ref; tag, when not empty, must be the bundle's name.
func signedFrom(m v1.Manifest, content []byte, digest, ref, tag string) (Signed, error) {
	b, err := Decode(content)
	if err != nil {
		return Signed{}, fmt.Errorf("bundle %s: %w", ref, err)
	}
	if tag != "" && tag != b.Name {
		return Signed{}, fmt.Errorf("%w: %s holds bundle %s", ErrNameMismatch, ref, b.Name)
	}
	s := Signed{Bundle: b, Digest: digest}
	if enc, ok := m.Annotations[SignatureAnnotation]; ok {
		var err error
		if s.Signature, err = base64.StdEncoding.DecodeString(enc); err != nil || len(s.Signature) == 0 {
			return Signed{}, fmt.Errorf("%w: bundle %s: the signature annotation is not base64", ErrBadSignature, ref)
		}
	}
	return s, nil
}

// contentLayer returns the bundle content's descriptor of a bundle manifest.
func contentLayer(m v1.Manifest) (v1.Descriptor, error) {
	if m.ArtifactType != ArtifactType && m.Config.MediaType != ArtifactType {
		return v1.Descriptor{}, fmt.Errorf("not a Flotilla bundle (artifactType %q, want %s)", m.ArtifactType, ArtifactType)
	}
	var found []v1.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == ContentMediaType {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return v1.Descriptor{}, fmt.Errorf("a bundle has exactly one %s layer, this one has %d", ContentMediaType, len(found))
	}
	if found[0].Size < 0 || found[0].Size > maxContentSize {
		return v1.Descriptor{}, fmt.Errorf("bundle content of %d bytes is larger than %d", found[0].Size, maxContentSize)
	}
	return found[0], nil
}

// List returns the names of the bundles for kubernetesMinor ("1.36") in
// <registry>/<repository>, oldest first (by build number), from the repository's tags. A
// repository that does not exist has none.
func List(ctx context.Context, registry, repository, kubernetesMinor string, opts ...remote.Option) ([]string, error) {
	minor, err := kubeversion.Minor(kubernetesMinor)
	if err != nil {
		return nil, err
	}
	repo, err := name.NewRepository(registry+"/"+repository, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("bundle repository %s/%s: %w", registry, repository, err)
	}
	tags, err := remote.List(repo, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("listing bundles in %s: %w", repo, err)
	}
	type named struct {
		name  string
		build int
	}
	var found []named
	for _, t := range tags {
		m, build, err := ParseName(t)
		if err != nil || m != minor {
			continue
		}
		found = append(found, named{t, build})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].build < found[j].build })
	names := make([]string, 0, len(found))
	for _, f := range found {
		names = append(names, f.name)
	}
	return names, nil
}
