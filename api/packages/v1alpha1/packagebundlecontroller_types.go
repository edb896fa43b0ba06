package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultUpgradeCheckInterval is how often a PackageBundleController checks its source when
// spec.upgradeCheckInterval is not set.
const DefaultUpgradeCheckInterval = "24h"

// PackageBundleControllerState summarises a PackageBundleController.
// +kubebuilder:validation:Enum=active;"upgrade available";disconnected;ignored
type PackageBundleControllerState string

// States of a PackageBundleController.
const (
	// BundleControllerActive: the source answered and the active bundle is the newest valid one.
	BundleControllerActive PackageBundleControllerState = "active"
	// BundleControllerUpgradeAvailable: the source holds a valid bundle newer than the active one.
	BundleControllerUpgradeAvailable PackageBundleControllerState = "upgrade available"
	// BundleControllerDisconnected: the source could not be read (or none is configured); the
	// controller retries with backoff.
	BundleControllerDisconnected PackageBundleControllerState = "disconnected"
	// BundleControllerIgnored: the PackageBundleController belongs to no Flotilla Cluster (its
	// name names none, or it is outside flotilla-packages) and does nothing.
	BundleControllerIgnored PackageBundleControllerState = "ignored"
)

// BundleSource is an OCI registry repository holding signed bundles (and, by default, the
// charts they list).
type BundleSource struct {
	// registry is the registry's host[:port], e.g. 127.0.0.1:5001 or public.ecr.aws.
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`
	// repository is the bundles' repository in the registry, e.g. flotilla/bundles.
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`
}

// PackageBundleControllerSpec says where a cluster's bundles come from and which one it uses.
type PackageBundleControllerSpec struct {
	// logLevel raises the verbosity of the controllers' logs about this cluster: a message
	// logged at level n shows at level n-logLevel (0 = as configured for the manager).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9
	LogLevel int32 `json:"logLevel,omitempty"`
	// activeBundle names the PackageBundle the cluster's Packages are resolved in. When empty,
	// the controller sets it to the newest valid bundle for the cluster's Kubernetes minor;
	// changing it upgrades the Packages that do not pin a version.
	// +optional
	ActiveBundle string `json:"activeBundle,omitempty"`
	// upgradeCheckInterval is how often the source is checked for new bundles (default 24h).
	// Set or change the packages.flotilla.dev/check-upgrades annotation to check now.
	// +optional
	// +kubebuilder:default="24h"
	UpgradeCheckInterval metav1.Duration `json:"upgradeCheckInterval,omitempty,omitzero"`
	// source is the registry repository of the bundles; the package-defaults ConfigMap's when
	// not set.
	// +optional
	Source *BundleSource `json:"source,omitempty"`

	// registryMirror is where this cluster's bundles and charts are pulled from instead of the
	// registries that are named, overriding the management cluster's mirror (the ConfigMap
	// flotilla-system/registry-mirror).
	// +optional
	RegistryMirror *RegistryMirror `json:"registryMirror,omitempty"`
}

// RegistryMirror is a registry holding copies of other registries' repositories at the same
// paths, below an optional prefix (`flotilla packages import` fills one).
type RegistryMirror struct {
	// registry is the mirror's host[:port], optionally followed by the path the copies are
	// below, such as 127.0.0.1:5002 or mirror.example.com/flotilla.
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`
	// credentialsSecret names a Secret in flotilla-packages with the keys username, password
	// and ca.crt (each optional) for the mirror. The credentials of the mirrored registries
	// are never sent to the mirror.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// plainHTTP reaches the mirror over plain HTTP.
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// insecureSkipTLSVerify does not verify the mirror's certificate (tests only).
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
}

// PackageBundleControllerStatus is what the controller last found.
type PackageBundleControllerStatus struct {
	// state is active, upgrade available, disconnected or ignored.
	// +optional
	State PackageBundleControllerState `json:"state,omitempty"`
	// detail explains the state.
	// +optional
	Detail string `json:"detail,omitempty"`
	// kubernetesMinor is the cluster's Kubernetes minor version the bundles are chosen for.
	// +optional
	KubernetesMinor string `json:"kubernetesMinor,omitempty"`
	// source is the registry repository last read (spec.source or the defaults').
	// +optional
	Source *BundleSource `json:"source,omitempty"`
	// registryMirror is the mirror the source was last read through (spec.registryMirror, else
	// the management cluster's); empty when none is set.
	// +optional
	RegistryMirror string `json:"registryMirror,omitempty"`
	// latestBundle is the newest valid bundle in the source for kubernetesMinor.
	// +optional
	LatestBundle string `json:"latestBundle,omitempty"`
	// bundles are the valid bundles for kubernetesMinor, oldest first.
	// +optional
	Bundles []string `json:"bundles,omitempty"`
	// lastCheckTime is when the source was last read successfully or not.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// observedCheckRequest is the value of the check-upgrades annotation the last check answered.
	// +optional
	ObservedCheckRequest string `json:"observedCheckRequest,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, SourceReachable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackageBundleController is one cluster's view of curated packages: where its bundles come
// from and which bundle it uses. It lives in flotilla-packages and is named after the cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packagebundlecontrollers,scope=Namespaced,categories=flotilla,shortName=pbc
// +kubebuilder:printcolumn:name="Active Bundle",type=string,JSONPath=`.spec.activeBundle`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Detail",type=string,JSONPath=`.status.detail`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageBundleController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageBundleControllerSpec   `json:"spec,omitempty"`
	Status PackageBundleControllerStatus `json:"status,omitempty"`
}

// PackageBundleControllerList is a list of PackageBundleControllers.
// +kubebuilder:object:root=true
type PackageBundleControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageBundleController `json:"items"`
}
