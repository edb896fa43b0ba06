package desired

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

func TestReleaseProxyName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ReleaseProxyName("hello", "w1")).To(MatchRegexp(`^hello-w1-[0-9a-f]{6}$`))
	g.Expect(ReleaseProxyName("hello", "w1")).To(Equal(ReleaseProxyName("hello", "w1")), "deterministic")
	g.Expect(ReleaseProxyName("a-b", "c")).NotTo(Equal(ReleaseProxyName("a", "b-c")), "names that join alike stay apart")
	long := ReleaseProxyName(strings.Repeat("p", 63), strings.Repeat("c", 250))
	g.Expect(len(long)).To(BeNumerically("<=", 253))
}

func TestReleaseProxy(t *testing.T) {
	g := NewWithT(t)
	hcp := &addonsv1.HelmChartProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "fleet", UID: "uid-1"},
		Spec:       addonsv1.HelmChartProxySpec{ReleaseSpec: addonsv1.ReleaseSpec{ChartName: "hello", RepoURL: "oci://r/c"}},
	}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "fleet"}}
	hrp := ReleaseProxy(hcp, cluster, Rendered{Values: "a: 1\n"})
	g.Expect(hrp.Namespace).To(Equal("fleet"))
	g.Expect(hrp.Labels).To(Equal(map[string]string{addonsv1.HelmChartProxyNameLabel: "hello", clusterv1.ClusterNameLabel: "w1"}))
	g.Expect(metav1.IsControlledBy(hrp, hcp)).To(BeTrue())
	g.Expect(hrp.Spec.ClusterName).To(Equal("w1"))
	g.Expect(hrp.Spec.ReleaseName).To(Equal("hello"), "the proxy's name when releaseName is empty")
	g.Expect(hrp.Spec.ReconcileStrategy).To(Equal(addonsv1.ReconcileContinuous))
	g.Expect(hrp.Spec.Values).To(Equal("a: 1\n"))

	hcp.Spec.ReleaseName = "greeter"
	g.Expect(ReleaseProxy(hcp, cluster, Rendered{}).Spec.ReleaseName).To(Equal("greeter"))
}
