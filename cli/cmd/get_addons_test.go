package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

func TestAddonRowsListEveryProxyInEveryCluster(t *testing.T) {
	g := NewWithT(t)
	hrp := func(proxy, cluster string, ready metav1.ConditionStatus, reason string) addonsv1.HelmReleaseProxy {
		r := addonsv1.HelmReleaseProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Labels: map[string]string{addonsv1.HelmChartProxyNameLabel: proxy}}}
		r.Spec.ClusterName, r.Spec.ChartName = cluster, "hello"
		r.Status.Revision, r.Status.ChartVersion, r.Status.ReleaseStatus = 2, "1.1.0", "deployed"
		r.Status.Conditions = []metav1.Condition{{Type: addonsv1.ReadyCondition, Status: ready, Reason: reason, Message: "m"}}
		return r
	}
	proxy := func(name string) addonsv1.HelmChartProxy {
		p := addonsv1.HelmChartProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}}
		p.Spec.ChartName = "hello"
		return p
	}
	rows := addonRows(&client.Addons{
		Proxies:  []addonsv1.HelmChartProxy{proxy("hello"), proxy("lonely")},
		Releases: []addonsv1.HelmReleaseProxy{hrp("hello", "w1", metav1.ConditionTrue, "Ready"), hrp("hello", "w2", metav1.ConditionFalse, "InstallFailed")},
	})
	g.Expect(rows).To(Equal([]addonRow{
		{namespace: "fleet", addon: "hello", cluster: "w1", chart: "hello", version: "1.1.0", revision: "2", status: "deployed", ready: "True", reason: "Ready", message: "m"},
		{namespace: "fleet", addon: "hello", cluster: "w2", chart: "hello", version: "1.1.0", revision: "2", status: "deployed", ready: "False", reason: "InstallFailed", message: "m"},
		{namespace: "fleet", addon: "lonely", cluster: "<none>", chart: "hello", version: "-", revision: "-", status: "-", ready: "-", reason: "-"},
	}))
}
