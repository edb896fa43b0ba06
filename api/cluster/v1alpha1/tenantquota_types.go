package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantQuotaSpec is what an admin allows the Clusters of each namespace it names.
type TenantQuotaSpec struct {
	// namespaces are the namespaces the limits apply to, each on its own: every namespace named
	// gets the whole of each limit.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces"`

	// clusters is the most Clusters a namespace may hold. Unlimited when left out.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Clusters *int32 `json:"clusters,omitempty"`

	// workers is the most worker machines the Clusters of a namespace may have altogether (the
	// counts of all their worker node groups, simulated and real). Unlimited when left out.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Workers *int32 `json:"workers,omitempty"`

	// realNodes is the most real nodes (worker node groups with nodes: Real) the Clusters of a
	// namespace may have altogether. A real node runs a kubelet, containerd and runc on the
	// management cluster's machine, so only an admin grants them: a namespace that no
	// TenantQuota names, or whose quotas leave this out, may have none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	RealNodes int32 `json:"realNodes,omitempty"`
}

// TenantQuota is an admin's grant of real nodes to namespaces, and the limits on the Clusters,
// worker machines and real nodes of each. The Cluster webhook holds to it every request that
// does not come from an admin; where several TenantQuotas name one namespace, the smallest of
// each limit applies. Cluster-scoped: an admin's, like the infrastructure identities.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=tenantquotas,scope=Cluster,categories=flotilla
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.spec.clusters`
// +kubebuilder:printcolumn:name="Workers",type=integer,JSONPath=`.spec.workers`
// +kubebuilder:printcolumn:name="Real nodes",type=integer,JSONPath=`.spec.realNodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TenantQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TenantQuotaSpec `json:"spec,omitempty"`
}

// TenantQuotaList is a list of TenantQuotas.
// +kubebuilder:object:root=true
type TenantQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantQuota `json:"items"`
}
