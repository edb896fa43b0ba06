package caaph

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const caaphProxy = `apiVersion: addons.cluster.x-k8s.io/v1alpha1
kind: HelmChartProxy
metadata: {name: nginx, namespace: fleet, labels: {team: web}}
spec:
  clusterSelector: {matchLabels: {nginx: enabled}}
  repoURL: https://charts.example
  chartName: nginx
  version: 1.2.3
  namespace: ingress
  valuesTemplate: "controller:\n  name: {{ .Cluster.metadata.name }}\n"
  reconcileStrategy: InstallOnce
  options:
    wait: true
    waitForJobs: true
    timeout: 10m
    install: {createNamespace: false}
    upgrade: {maxHistory: 7}
  tlsConfig:
    caSecret: {name: charts-ca, namespace: other}
`

func release(t *testing.T, name, cluster string) unstructured.Unstructured {
	return *object(t, "spec: {releaseName: "+name+", clusterRef: {name: "+cluster+"}}")
}

func TestACAAPHProxyConvertsToOneWithTheSameChartValuesAndReleaseNames(t *testing.T) {
	g := NewWithT(t)
	c, err := Convert(object(t, caaphProxy), []unstructured.Unstructured{release(t, "nginx-x7k2p", "w1"), release(t, "nginx-x7k2p", "w2")})
	g.Expect(err).NotTo(HaveOccurred())
	p := c.Proxy
	g.Expect(p.Name).To(Equal("nginx"))
	g.Expect(p.Namespace).To(Equal("fleet"))
	g.Expect(p.Labels).To(Equal(map[string]string{"team": "web"}))
	g.Expect(p.Spec.ClusterSelector).To(Equal(metav1.LabelSelector{MatchLabels: map[string]string{"nginx": "enabled"}}))
	g.Expect(p.Spec.ReleaseName).To(Equal("nginx-x7k2p"), "the name CAAPH generated, the same in every cluster")
	g.Expect(p.Spec.ValuesTemplate).To(Equal("controller:\n  name: {{ .Cluster.metadata.name }}\n"))
	g.Expect(p.Spec.ReleaseSpec).To(Equal(addonsv1.ReleaseSpec{
		ChartName: "nginx", RepoURL: "https://charts.example", Version: "1.2.3", Namespace: "ingress",
		ReconcileStrategy: addonsv1.ReconcileInstallOnce,
		Options: addonsv1.HelmOptions{Wait: true, Timeout: &metav1.Duration{Duration: 10 * time.Minute},
			CreateNamespace: ptr.To(false), MaxHistory: 7},
		Registry: &addonsv1.RegistryOptions{CASecretRef: &addonsv1.SecretReference{Name: "charts-ca"}},
	}))
	g.Expect(c.Warnings).To(ConsistOf(
		ContainSubstring("options.waitForJobs"),
		ContainSubstring("tlsConfig.caSecret is in namespace other: copy Secret charts-ca into fleet"),
	))
}

func TestReleaseNamesThatDifferBetweenClustersAreRefused(t *testing.T) {
	g := NewWithT(t)
	_, err := Convert(object(t, caaphProxy), []unstructured.Unstructured{release(t, "nginx-aaaaa", "w1"), release(t, "nginx-bbbbb", "w2")})
	g.Expect(err).To(MatchError(ContainSubstring("CAAPH generated one per cluster: nginx-aaaaa (w1); nginx-bbbbb (w2)")))

	named := object(t, caaphProxy)
	g.Expect(unstructured.SetNestedField(named.Object, "nginx", "spec", "releaseName")).To(Succeed())
	c, err := Convert(named, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Proxy.Spec.ReleaseName).To(Equal("nginx"), "spec.releaseName wins")
}
