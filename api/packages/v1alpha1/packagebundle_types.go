package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageBundleState says whether a bundle may be used.
// +kubebuilder:validation:Enum=valid;invalid
type PackageBundleState string

// States of a PackageBundle.
const (
	// BundleValid: the bundle's signature verified with the configured public key.
	BundleValid PackageBundleState = "valid"
	// BundleInvalid: the bundle is unsigned or its signature is bad; it is never used.
	BundleInvalid PackageBundleState = "invalid"
)

// PackageSource is where a package's charts are pulled from: oci://<registry>/<repository>.
type PackageSource struct {
	// registry is the registry's host[:port].
	Registry string `json:"registry"`
	// repository is the chart's repository in the registry; its last element is the chart name.
	Repository string `json:"repository"`
}

// PackageVersion is one version of a package.
type PackageVersion struct {
	// version is the chart version, e.g. 0.1.0.
	Version string `json:"version"`
	// digest pins the chart: sha256:... of its OCI manifest.
	// +optional
	Digest string `json:"digest,omitempty"`
	// schema is the JSON Schema a Package's spec.config must satisfy, as JSON.
	// +optional
	Schema string `json:"schema,omitempty"`
	// dependencies name packages of the same bundle that are installed (and Ready) first.
	// +optional
	Dependencies []string `json:"dependencies,omitempty"`
}

// BundleImage is one container image a bundle pins.
type BundleImage struct {
	// name is the image as charts and nodes name it, e.g. ghcr.io/flotilla-dev/hello-flotilla:0.1.0.
	Name string `json:"name"`
	// digest is the sha256:... of its manifest or image index.
	Digest string `json:"digest"`
}

// BundlePackage is one package of a bundle.
type BundlePackage struct {
	// name is the package's name, e.g. hello-flotilla.
	Name string `json:"name"`
	// description says what the package is.
	// +optional
	Description string `json:"description,omitempty"`
	// source is where its charts are.
	Source PackageSource `json:"source"`
	// versions, newest first: the first is the default version.
	Versions []PackageVersion `json:"versions"`
}

// PackageBundleSpec is a bundle's content, as signed.
type PackageBundleSpec struct {
	// kubernetesMinor is the Kubernetes minor version the bundle is for, e.g. 1.36.
	KubernetesMinor string `json:"kubernetesMinor"`
	// build numbers the bundles of one minor; higher is newer.
	Build int `json:"build"`
	// source is the registry repository the bundle was read from.
	// +optional
	Source *BundleSource `json:"source,omitempty"`
	// packages are the curated packages.
	// +optional
	Packages []BundlePackage `json:"packages,omitempty"`
	// images are the container images the bundle's chart versions and real nodes run, each
	// pinned by its digest, sorted by name (as the publisher recorded them).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Images []BundleImage `json:"images,omitempty"`
	// signature is the publisher's ECDSA P-256 signature (ASN.1 DER) of the bundle's canonical
	// content: its name, kubernetesMinor, build, packages and images. The controller verifies it with the
	// public key in the package-defaults ConfigMap, here in the API server as well as when the
	// bundle is read from the registry, so an edited bundle or a rotated key invalidates it.
	// +optional
	Signature []byte `json:"signature,omitempty"`
}

// PackageBundleStatus says whether the bundle may be used.
type PackageBundleStatus struct {
	// state is valid or invalid.
	// +optional
	State PackageBundleState `json:"state,omitempty"`
	// detail explains an invalid state.
	// +optional
	Detail string `json:"detail,omitempty"`
	// conditions: Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackageBundle is one signed bundle read from an OCI registry: the curated packages for one
// Kubernetes minor. Bundles are shared by every cluster and live in flotilla-packages, named by
// minor and build (v1-36-3). A bundle holds no per-cluster state: a PackageBundleController says
// which bundle its cluster uses.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packagebundles,scope=Namespaced,categories=flotilla
// +kubebuilder:printcolumn:name="Kubernetes",type=string,JSONPath=`.spec.kubernetesMinor`
// +kubebuilder:printcolumn:name="Build",type=integer,JSONPath=`.spec.build`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageBundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageBundleSpec   `json:"spec,omitempty"`
	Status PackageBundleStatus `json:"status,omitempty"`
}

// PackageBundleList is a list of PackageBundles.
// +kubebuilder:object:root=true
type PackageBundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageBundle `json:"items"`
}

// IsValid reports whether the bundle may be used: its Valid condition is True and was written
// for the bundle's current generation. A verdict on an older spec says nothing about this one,
// so a bundle whose spec changed is not used until the packagebundle reconciler has verified it
// again. status.state is what `kubectl get` shows; it is never read to decide.
func (b *PackageBundle) IsValid() bool {
	return b.WhyNotValid() == ""
}

// WhyNotValid says why the bundle may not be used, "" when it may (see IsValid).
func (b *PackageBundle) WhyNotValid() string {
	c := meta.FindStatusCondition(b.Status.Conditions, ValidCondition)
	switch {
	case c == nil:
		return "not verified yet"
	case c.ObservedGeneration != b.Generation:
		return fmt.Sprintf("its spec changed (generation %d) since it was last verified (generation %d); waiting for it to be verified again",
			b.Generation, c.ObservedGeneration)
	case c.Status != metav1.ConditionTrue:
		return c.Message
	}
	return ""
}

// Package returns the bundle's package named name, nil when it has none.
func (b *PackageBundle) Package(name string) *BundlePackage {
	for i := range b.Spec.Packages {
		if b.Spec.Packages[i].Name == name {
			return &b.Spec.Packages[i]
		}
	}
	return nil
}

// Version returns the package's version v, or its default (first) version when v is empty;
// nil when it has no such version.
func (p *BundlePackage) Version(v string) *PackageVersion {
	if v == "" {
		if len(p.Versions) == 0 {
			return nil
		}
		return &p.Versions[0]
	}
	for i := range p.Versions {
		if p.Versions[i].Version == v {
			return &p.Versions[i]
		}
	}
	return nil
}
