package kubeversion

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a Kubernetes version: a minor version ("1.36") or a full one ("v1.36.3").
type Version struct {
	Major int
	Minor int
	// Patch is 0 when HasPatch is false.
	Patch int
	// HasPatch is false for a minor version such as "1.36".
	HasPatch bool
}

// versionRE matches "1.36", "v1.36.3" and "v1.36.3-dirty": major, minor, optional patch, and
// after the patch an optional pre-release or build suffix.
var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*)(?:[-+][0-9A-Za-z.+-]*)?)?$`)

// Parse reads a Kubernetes version such as "1.36", "v1.36" or "v1.36.3-dirty".
func Parse(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a Kubernetes version such as 1.36 or v1.36.3", s)
	}
	// The pattern admits only digits that fit: Atoi cannot fail on them short of overflow.
	major, errMajor := strconv.Atoi(m[1])
	minor, errMinor := strconv.Atoi(m[2])
	if errMajor != nil || errMinor != nil {
		return Version{}, fmt.Errorf("%q is not a Kubernetes version such as 1.36 or v1.36.3", s)
	}
	v := Version{Major: major, Minor: minor}
	if m[3] != "" {
		patch, err := strconv.Atoi(m[3])
		if err != nil {
			return Version{}, fmt.Errorf("%q is not a Kubernetes version such as 1.36 or v1.36.3", s)
		}
		v.Patch, v.HasPatch = patch, true
	}
	return v, nil
}

// MinorString is the minor version, such as "1.36", the form a Cluster names.
func (v Version) MinorString() string {
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
}

// String is "v1.36.3", or "v1.36" for a minor version.
func (v Version) String() string {
	if !v.HasPatch {
		return "v" + v.MinorString()
	}
	return "v" + v.MinorString() + "." + strconv.Itoa(v.Patch)
}

// SameMinor is true when v and w have the same major and minor.
func (v Version) SameMinor(w Version) bool {
	return v.Major == w.Major && v.Minor == w.Minor
}

// Compare orders versions by major, minor and patch (a minor version counts as patch 0): -1 when
// v is older than w, 0 when they are the same, +1 when v is newer.
func (v Version) Compare(w Version) int {
	return cmp.Or(cmp.Compare(v.Major, w.Major), cmp.Compare(v.Minor, w.Minor), cmp.Compare(v.Patch, w.Patch))
}

// Minor returns the minor version ("1.36") of a version such as "v1.36.3".
func Minor(s string) (string, error) {
	v, err := Parse(s)
	if err != nil {
		return "", err
	}
	return v.MinorString(), nil
}

// Equal is true when a and b are the same version, written either way: "v1.36.3-dirty" equals
// "1.36.3", and "1.36" equals "v1.36" but not "v1.36.0". An empty or unparsable version equals
// nothing.
func Equal(a, b string) bool {
	va, errA := Parse(a)
	vb, errB := Parse(b)
	return errA == nil && errB == nil && va == vb
}

// AtLeast is true when a is b or newer; false when either does not parse.
func AtLeast(a, b string) bool {
	va, errA := Parse(a)
	vb, errB := Parse(b)
	return errA == nil && errB == nil && va.Compare(vb) >= 0
}
