package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// PackageState summarises a Package.
// +kubebuilder:validation:Enum=pending;installing;installed;upgrading;failed;uninstalling
type PackageState string

// States of a Package.
const (
	// PackagePending: waiting for a PackageBundleController, a bundle, dependencies or the
	// cluster.
	PackagePending PackageState = "pending"
	// PackageInstalling: Helm is installing the release (it has never been installed).
	PackageInstalling PackageState = "installing"
	// PackageInstalled: the release is deployed with the desired chart and config.
	PackageInstalled PackageState = "installed"
	// PackageUpgrading: Helm is upgrading the release to a new chart or config.
	PackageUpgrading PackageState = "upgrading"
	// PackageFailed: the spec is invalid, or Helm's last install or upgrade failed.
	PackageFailed PackageState = "failed"
	// PackageUninstalling: the Package is being deleted and its release uninstalled.
	PackageUninstalling PackageState = "uninstalling"
)

// DefaultTargetNamespace is where a Package's release is installed in its cluster when
// spec.targetNamespace is empty.
const DefaultTargetNamespace = "flotilla-packages"

// PackageSpec names a package of the cluster's active bundle and configures it.
type PackageSpec struct {
	// packageName is a package of the active bundle, e.g. hello-flotilla.
	// +kubebuilder:validation:MinLength=1
	PackageName string `json:"packageName"`
	// packageVersion pins a version of the package in the active bundle; the bundle's default
	// version when empty (and then a new active bundle upgrades the package).
	// +optional
	PackageVersion string `json:"packageVersion,omitempty"`
	// config is the package's configuration as YAML: the Helm values. It must satisfy the
	// version's JSON Schema.
	// +optional
	Config string `json:"config,omitempty"`
	// targetNamespace is the namespace of the cluster the release goes to (created when missing);
	// flotilla-packages when empty.
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// postRender patches the package's rendered manifests with kustomize before they are
	// installed: patches (strategic merge, JSON 6902), images and labels.
	// +optional
	PostRender *addonsv1.PostRender `json:"postRender,omitempty"`
	// uninstallOnClusterDelete says what becomes of the release when its cluster is deleted:
	// Ensure, BestEffort (the default) or Skip (docs/packages.md, "Deleting a cluster").
	// +optional
	UninstallOnClusterDelete flotillav1.UninstallOnClusterDelete `json:"uninstallOnClusterDelete,omitempty"`
}

// PackageStatus is what the controller last did.
type PackageStatus struct {
	// state is pending, installing, installed, upgrading, failed or uninstalling.
	// +optional
	State PackageState `json:"state,omitempty"`
	// detail explains the state.
	// +optional
	Detail string `json:"detail,omitempty"`
	// currentVersion is the version installed in the cluster.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`
	// targetVersion is the version the spec resolves to in the active bundle.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// bundle is the PackageBundle targetVersion was resolved in.
	// +optional
	Bundle string `json:"bundle,omitempty"`
	// revision is the Helm release's revision.
	// +optional
	Revision int `json:"revision,omitempty"`
	// chartDigest is the digest (sha256:...) of the chart the release was last installed or
	// upgraded from, as the release records it.
	// +optional
	ChartDigest string `json:"chartDigest,omitempty"`
	// valuesHash is the SHA-256 of the values (spec.config) the release was last installed or
	// upgraded with, as the release records it. With chartDigest it tells whether the next
	// reconcile installs anything: when both match the desired release, the state stays installed.
	// +optional
	ValuesHash string `json:"valuesHash,omitempty"`
	// upgradesAvailable are versions of the package newer than currentVersion in the active
	// bundle.
	// +optional
	UpgradesAvailable []string `json:"upgradesAvailable,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Package is one curated package installed into a cluster: a Helm release named after the
// Package, in the cluster whose namespace (flotilla-packages-<cluster>) holds it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packages,scope=Namespaced,categories=flotilla
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.packageName`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetVersion`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Package struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageSpec   `json:"spec,omitempty"`
	Status PackageStatus `json:"status,omitempty"`
}

// PackageList is a list of Packages.
// +kubebuilder:object:root=true
type PackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Package `json:"items"`
}
