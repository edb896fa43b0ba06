package helmchartproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// maxNameLength is the longest object name the builder produces (a DNS subdomain).
const maxNameLength = 253

// ReleaseProxyName is the name of the HelmReleaseProxy of proxy for cluster:
// "<proxy>-<cluster>-<digest>", the digest (6 hex digits of both names) keeping proxy "a-b" with
// cluster "c" apart from proxy "a" with cluster "b-c".
func ReleaseProxyName(proxy, cluster string) string {
	sum := sha256.Sum256([]byte(proxy + "/" + cluster))
	suffix := "-" + hex.EncodeToString(sum[:])[:6]
	name := proxy + "-" + cluster
	if len(name)+len(suffix) > maxNameLength {
		name = name[:maxNameLength-len(suffix)]
	}
	return name + suffix
}

// releaseName is the Helm release name the proxy's releases get.
func releaseName(hcp *addonsv1.HelmChartProxy) string {
	if hcp.Spec.ReleaseName != "" {
		return hcp.Spec.ReleaseName
	}
	return hcp.Name
}

// DesiredReleaseProxy builds the HelmReleaseProxy of hcp for cluster, with the values rendered
// for that cluster.
func DesiredReleaseProxy(hcp *addonsv1.HelmChartProxy, cluster *clusterv1.Cluster, renderedValues string) *addonsv1.HelmReleaseProxy {
	spec := *hcp.Spec.ReleaseSpec.DeepCopy()
	if spec.ReconcileStrategy == "" {
		spec.ReconcileStrategy = addonsv1.ReconcileContinuous
	}
	return &addonsv1.HelmReleaseProxy{
		TypeMeta: metav1.TypeMeta{APIVersion: addonsv1.GroupVersion.String(), Kind: "HelmReleaseProxy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ReleaseProxyName(hcp.Name, cluster.Name),
			Namespace: hcp.Namespace,
			Labels: map[string]string{
				addonsv1.HelmChartProxyNameLabel: hcp.Name,
				clusterv1.ClusterNameLabel:       cluster.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         addonsv1.GroupVersion.String(),
				Kind:               "HelmChartProxy",
				Name:               hcp.Name,
				UID:                hcp.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: addonsv1.HelmReleaseProxySpec{
			ClusterName: cluster.Name,
			ReleaseName: releaseName(hcp),
			Values:      renderedValues,
			ReleaseSpec: spec,
		},
	}
}

// equalJSON compares two values by their JSON encoding, as the API server stores them.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
