package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitOpsConfigKind is the kind a Cluster's spec.gitOpsRef names.
const GitOpsConfigKind = "GitOpsConfig"

// GitOpsCredentialsNamespace is the namespace of the Secret a GitOpsConfig's spec.secretRef
// names: credentials stay in the management cluster's system namespace, out of reach of the
// people who create clusters.
const GitOpsCredentialsNamespace = SystemNamespace

// GitOpsApplierServiceAccount is the ServiceAccount, in a GitOpsConfig's namespace, that the
// GitOps reconciler impersonates to apply what is committed to the repository: its writers may
// do what that ServiceAccount may in that namespace (what an admin binds to it: the cluster
// creator role, as `flotilla create cluster` does when it creates the GitOpsConfig), and
// nothing that the reconciler's own identity may besides.
const GitOpsApplierServiceAccount = "flotilla-gitops"

// Defaults of a GitOpsConfig's spec, set by the API server (CRD defaults) and by spec files.
const (
	// DefaultGitOpsBranch is the branch of a GitOpsConfig that names none.
	DefaultGitOpsBranch = "main"
	// DefaultGitOpsInterval is how often a GitOpsConfig that names no interval pulls.
	DefaultGitOpsInterval = "1m"
	// DefaultGitOpsTimeout bounds each Git operation of a GitOpsConfig that names no timeout.
	DefaultGitOpsTimeout = "1m"
)

// Keys of the credentials Secret a GitOpsConfig's spec.secretRef names. HTTPS repositories use
// username and password (a password may be an access token); SSH repositories use identity and
// known_hosts.
const (
	// GitOpsUsernameKey holds the HTTPS user name.
	GitOpsUsernameKey = "username"
	// GitOpsPasswordKey holds the HTTPS password or access token.
	GitOpsPasswordKey = "password"
	// GitOpsIdentityKey holds a PEM-encoded SSH private key.
	GitOpsIdentityKey = "identity"
	// GitOpsKnownHostsKey holds the SSH known_hosts lines of the Git server; required with
	// identity.
	GitOpsKnownHostsKey = "known_hosts"
)

// Condition reasons of a GitOpsConfig's Ready condition (ReadyCondition).
const (
	// SyncedReason: the branch's head commit is applied.
	SyncedReason = "Synced"
	// SyncFailedReason: the last sync failed: the repository could not be read, a spec in it
	// is invalid (the message names the file and the field), or applying it failed (the message
	// says what the API server answered).
	SyncFailedReason = "SyncFailed"
	// WaitingForManagementClusterReason: the API server holds no management Cluster (one with
	// spec.management true that manages itself), or more than one, so the directory to sync is
	// not known. This is also the state while a management cluster is moved elsewhere.
	WaitingForManagementClusterReason = "WaitingForManagementCluster"
)

// GitOpsConfigSpec says where the cluster specs of a management cluster live in Git.
//
// The repository holds one directory per management cluster:
//
//	clusters/<management>/cluster.yaml                            the management cluster's spec
//	clusters/<management>/workload-clusters/<name>/cluster.yaml   each workload cluster's spec
//
// Each cluster.yaml is a cluster spec file, as `flotilla create cluster -f` takes.
type GitOpsConfigSpec struct {
	// repository is the Git repository: a URL (https://, http://, ssh://, git@host:path or
	// file://) or an absolute path of a repository on the management cluster's machine, bare or
	// not.
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`

	// branch is the branch the specs are committed to and pulled from.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +optional
	Branch string `json:"branch,omitempty"`

	// interval is how often the management cluster pulls the branch, such as 30s or 5m.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Interval metav1.Duration `json:"interval,omitempty,omitzero"`

	// timeout bounds each Git operation of a sync (fetching the branch), such as 30s or 2m: a
	// Git server that does not answer within it fails the sync, which is tried again at the
	// next interval. GitOpsConfigs sync in parallel, so a hung server holds up only its own.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty,omitzero"`

	// secretRef names a Secret in flotilla-system holding the credentials the management
	// cluster pulls with: username and password for HTTPS, identity and known_hosts for SSH.
	// A repository that needs none (a local path, a public URL) leaves it out. Credentials are
	// never sent over plain http://, except to a loopback host (localhost, 127.0.0.0/8, ::1):
	// a sync of an http:// repository elsewhere with a secretRef fails without contacting it.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// SecretReference names a Secret in a namespace the referencing field documents.
type SecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// GitOpsConfigStatus is the observed state of a GitOpsConfig.
type GitOpsConfigStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// path is the directory of the repository the config syncs, clusters/<management>.
	// +optional
	Path string `json:"path,omitempty"`

	// lastAppliedCommit is the commit whose specs were last applied, in full.
	// +optional
	LastAppliedCommit string `json:"lastAppliedCommit,omitempty"`

	// clusters are the namespace/name of the Clusters the last applied commit holds.
	// +listType=set
	// +optional
	Clusters []string `json:"clusters,omitempty"`

	// conditions: Ready, True when the branch's head commit is applied.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GitOpsConfig points a management cluster at a Git repository of cluster specs: the CLI
// commits the specs of the Clusters whose spec.gitOpsRef names it, and the management cluster
// pulls the branch every interval and applies what changed.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=gitopsconfigs,scope=Namespaced,categories=flotilla
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.lastAppliedCommit`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitOpsConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsConfigSpec   `json:"spec,omitempty"`
	Status GitOpsConfigStatus `json:"status,omitempty"`
}

// GitOpsConfigList is a list of GitOpsConfigs.
// +kubebuilder:object:root=true
type GitOpsConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsConfig `json:"items"`
}
