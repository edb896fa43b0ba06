package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// Bundle lists the packages, and the chart versions of each, curated for one Kubernetes minor.
// Its JSON form (field names as tagged) is the artifact's content and what is signed.
type Bundle struct {
	// Name is "v<major>-<minor>-<build>", such as "v1-36-3"; it is also the artifact's tag.
	Name string `json:"name"`
	// KubernetesMinor is the Kubernetes minor the packages are curated for, such as "1.36".
	KubernetesMinor string `json:"kubernetesMinor"`
	// Build counts the bundles published for that minor: a higher build is newer.
	Build int `json:"build"`
	// Packages are sorted by name.
	Packages []Package `json:"packages"`
	// Images are the container images the chart versions of the bundle run with their default
	// values in a cluster of its minor, and those every real node runs, each pinned by the digest
	// it had in the image registry when the bundle was published, sorted by name. `flotilla
	// packages export` and `import` carry these images only, and only with these digests.
	Images []Image `json:"images,omitempty"`
}

// Image is one container image a bundle names.
type Image struct {
	// Name is the image as charts and nodes name it, such as
	// ghcr.io/flotilla-dev/hello-flotilla:0.1.0 (a tag, or a digest when the chart pins one).
	Name string `json:"name"`
	// Digest is its manifest's (or image index's) digest, "sha256:...".
	Digest string `json:"digest"`
}

// Image returns the image called name and true, or false when the bundle names none.
func (b Bundle) Image(name string) (Image, bool) {
	for _, i := range b.Images {
		if i.Name == name {
			return i, true
		}
	}
	return Image{}, false
}

// Package is one curated package: a Helm chart in an OCI registry.
type Package struct {
	// Name is the package's name, which is also its chart's name.
	Name string `json:"name"`
	// Description is the chart's description.
	Description string `json:"description,omitempty"`
	// Source is where the chart is: oci://<Source.Registry>/<Source.Repository>.
	Source Source `json:"source"`
	// Versions are the chart versions of the package, newest first.
	Versions []Version `json:"versions"`
}

// Source names an OCI repository.
type Source struct {
	// Registry is the registry's host[:port], such as 127.0.0.1:5001 or ghcr.io.
	Registry string `json:"registry"`
	// Repository is the chart's repository in that registry, chart name included, such as
	// "flotilla/hello-flotilla".
	Repository string `json:"repository"`
}

// Version is one version of a package's chart.
type Version struct {
	// Version is the chart's version (Chart.yaml version, also the chart's tag).
	Version string `json:"version"`
	// Digest is the digest of the chart's OCI manifest, "sha256:...": pull the chart as
	// oci://<registry>/<repository>@<digest>, which Helm verifies.
	Digest string `json:"digest"`
	// Schema is the chart's values.schema.json, the JSON Schema of the package's config; empty
	// when the chart has none.
	Schema string `json:"schema,omitempty"`
	// Dependencies are the names of packages of the same bundle that must be installed in the
	// cluster before this one (from the chart's annotation packages.flotilla.dev/dependencies).
	// Subcharts vendored in the chart are part of the chart and are not listed.
	Dependencies []string `json:"dependencies,omitempty"`
}

// Package returns the package called name and true, or false when the bundle has none.
func (b Bundle) Package(name string) (Package, bool) {
	for _, p := range b.Packages {
		if p.Name == name {
			return p, true
		}
	}
	return Package{}, false
}

// Canonical is the bundle's canonical content: its compact JSON encoding (encoding/json, fields
// in declaration order). It is what Sign signs and Verify checks, and the bytes of the bundle's
// OCI layer.
func Canonical(b Bundle) ([]byte, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encoding bundle %s: %w", b.Name, err)
	}
	return data, nil
}

// Decode reads a bundle's JSON content strictly: unknown fields and trailing data are errors, so
// that what is verified is everything the content says.
func Decode(data []byte) (Bundle, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return Bundle{}, fmt.Errorf("decoding bundle: %w", err)
	}
	if dec.More() {
		return Bundle{}, errors.New("decoding bundle: data after the bundle")
	}
	return b, nil
}

// digestRE is a sha256 digest.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

var nameRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)-(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$`)

// Name is the name of build build of the bundle for Kubernetes minor ("1.36", or "v1.36.3"
// whose patch is ignored): "v1-36-<build>".
func Name(minor string, build int) (string, error) {
	m, err := kubeversion.Minor(minor)
	if err != nil {
		return "", err
	}
	if build < 1 {
		return "", fmt.Errorf("bundle build %d: builds start at 1", build)
	}
	return "v" + strings.ReplaceAll(m, ".", "-") + "-" + strconv.Itoa(build), nil
}

// ParseName returns the Kubernetes minor ("1.36") and build of a bundle name ("v1-36-3").
func ParseName(name string) (minor string, build int, err error) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, fmt.Errorf("%q is not a bundle name such as v1-36-3 (v<major>-<minor>-<build>)", name)
	}
	build, err = strconv.Atoi(m[3])
	if err != nil || build < 1 {
		return "", 0, fmt.Errorf("bundle name %q: the build is a number from 1", name)
	}
	return m[1] + "." + m[2], build, nil
}

// Validate checks that the bundle is well formed: its name matches its minor and build, and
// package names and versions are set, unique, with digests.
func (b Bundle) Validate() error {
	minor, build, err := ParseName(b.Name)
	if err != nil {
		return err
	}
	if minor != b.KubernetesMinor || build != b.Build {
		return fmt.Errorf("bundle %s: name says Kubernetes %s build %d, content says %s build %d", b.Name, minor, build, b.KubernetesMinor, b.Build)
	}
	seen := map[string]bool{}
	for i, p := range b.Packages {
		if err := p.validate(i, seen); err != nil {
			return fmt.Errorf("bundle %s: %w", b.Name, err)
		}
		seen[p.Name] = true
	}
	seenImages := map[string]bool{}
	for i, img := range b.Images {
		if img.Name == "" || seenImages[img.Name] || !digestRE.MatchString(img.Digest) {
			return fmt.Errorf("bundle %s: images[%d] (%q) needs a name of its own and a sha256 digest", b.Name, i, img.Name)
		}
		seenImages[img.Name] = true
	}
	for _, p := range b.Packages {
		for _, v := range p.Versions {
			for _, d := range v.Dependencies {
				if !seen[d] {
					return fmt.Errorf("bundle %s: package %s %s depends on %s, which the bundle does not list", b.Name, p.Name, v.Version, d)
				}
			}
		}
	}
	return nil
}

// validate checks package i of a bundle, seen holding the names of those before it.
func (p Package) validate(i int, seen map[string]bool) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("packages[%d] has no name", i)
	case seen[p.Name]:
		return fmt.Errorf("package %s is listed twice", p.Name)
	case p.Source.Registry == "" || p.Source.Repository == "":
		return fmt.Errorf("package %s has no source registry and repository", p.Name)
	case len(p.Versions) == 0:
		return fmt.Errorf("package %s has no versions", p.Name)
	}
	for j, v := range p.Versions {
		if v.Version == "" || !strings.HasPrefix(v.Digest, "sha256:") {
			return fmt.Errorf("package %s versions[%d] needs a version and a sha256 digest", p.Name, j)
		}
	}
	return nil
}

// SameContent is true when a and b list the same packages and images, whatever their names and
// builds: publishing b after a would change nothing.
func SameContent(a, b Bundle) bool {
	ca, errA := json.Marshal([]any{a.Packages, a.Images})
	cb, errB := json.Marshal([]any{b.Packages, b.Images})
	return errA == nil && errB == nil && a.KubernetesMinor == b.KubernetesMinor && string(ca) == string(cb)
}

// Newest returns the names of the keep newest bundles (highest builds) among names, newest
// first. Names that are not bundle names are left out. It is the retention rule: the bundle
// controllers record only these from a registry, and collect the others (see
// packages/reconcilers/packagebundle).
func Newest(names []string, keep int) []string {
	type named struct {
		name  string
		build int
	}
	var all []named
	for _, n := range names {
		if _, build, err := ParseName(n); err == nil {
			all = append(all, named{n, build})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].build > all[j].build })
	out := make([]string, 0, min(keep, len(all)))
	for _, n := range all[:min(max(keep, 0), len(all))] {
		out = append(out, n.name)
	}
	return out
}
