package desired

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/values"
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

// Rendered is what a proxy's templates render to for one cluster.
type Rendered struct {
	// Values are the values (YAML) the valuesTemplate rendered; "" without a template.
	Values string
	// PostRender is the proxy's spec.postRender with its patches rendered; nil without one.
	PostRender *addonsv1.PostRender
}

// Render renders the proxy's valuesTemplate and the patches of its postRender (each a template
// too) for cluster, reading the cluster's control plane and infrastructure objects through c.
func Render(ctx context.Context, c ctrlclient.Reader, mapper meta.RESTMapper, hcp *addonsv1.HelmChartProxy, cluster *clusterv1.Cluster) (Rendered, error) {
	out := Rendered{PostRender: hcp.Spec.PostRender.DeepCopy()}
	templated := hcp.Spec.ValuesTemplate != ""
	if out.PostRender != nil {
		for _, p := range out.PostRender.Patches {
			templated = templated || strings.Contains(p.Patch, "{{")
		}
	}
	if !templated {
		return out, nil
	}
	data, err := values.ForCluster(ctx, c, mapper, cluster)
	if err != nil {
		return Rendered{}, err
	}
	if hcp.Spec.ValuesTemplate != "" {
		if out.Values, err = values.Render(ctx, hcp.Spec.ValuesTemplate, data); err != nil {
			return Rendered{}, err
		}
	}
	if out.PostRender == nil {
		return out, nil
	}
	for i := range out.PostRender.Patches {
		p := &out.PostRender.Patches[i]
		if !strings.Contains(p.Patch, "{{") {
			continue
		}
		if p.Patch, err = values.RenderText(ctx, p.Patch, data); err != nil {
			return Rendered{}, fmt.Errorf("postRender.patches[%d]: %w", i, err)
		}
	}
	return out, nil
}

// ReleaseProxy builds the HelmReleaseProxy of hcp for cluster, with the values and patches
// rendered for that cluster (Render).
func ReleaseProxy(hcp *addonsv1.HelmChartProxy, cluster *clusterv1.Cluster, rendered Rendered) *addonsv1.HelmReleaseProxy {
	spec := *hcp.Spec.ReleaseSpec.DeepCopy()
	spec.PostRender = rendered.PostRender
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
			Values:      rendered.Values,
			ReleaseSpec: spec,
		},
	}
}
