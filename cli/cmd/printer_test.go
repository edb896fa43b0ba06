package cmd

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// printed is what l prints as format: the output stream, then the error stream.
func printed(t *testing.T, l *listOutput, format string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	NewWithT(t).Expect(l.print(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, format)).To(Succeed())
	return out.String(), errOut.String()
}

// The get commands' tables, pinned: a change of a column shows here.
func TestGetCommandsPrintTables(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-5 * 24 * time.Hour))
	ready := []metav1.Condition{{Type: packagesv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: packagesv1.ReadyReason}}

	pkgs := []packagesv1.Package{{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", CreationTimestamp: created},
		Spec:       packagesv1.PackageSpec{PackageName: "hello-flotilla"},
		Status: packagesv1.PackageStatus{CurrentVersion: "0.1.0", TargetVersion: "0.2.0", State: packagesv1.PackageUpgrading,
			UpgradesAvailable: []string{"0.2.0", "0.3.0"}, Detail: "upgrading hello-flotilla from 0.1.0 to 0.2.0"},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "stack", CreationTimestamp: created},
		Spec:       packagesv1.PackageSpec{PackageName: "hello-stack"},
		Status:     packagesv1.PackageStatus{CurrentVersion: "1.0.0", TargetVersion: "1.0.0", State: packagesv1.PackageInstalled, Conditions: ready},
	}}
	bundles := []packagesv1.PackageBundle{{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-36-3", CreationTimestamp: created},
		Spec: packagesv1.PackageBundleSpec{KubernetesMinor: "1.36", Build: 3, Packages: make([]packagesv1.BundlePackage, 2),
			Source: &packagesv1.BundleSource{Registry: "127.0.0.1:5000", Repository: "flotilla/bundles"}},
		Status: packagesv1.PackageBundleStatus{State: packagesv1.BundleValid},
	}}
	pbcs := []packagesv1.PackageBundleController{{
		ObjectMeta: metav1.ObjectMeta{Name: "w1"},
		Spec:       packagesv1.PackageBundleControllerSpec{ActiveBundle: "v1-36-3"},
		Status: packagesv1.PackageBundleControllerStatus{KubernetesMinor: "1.36", State: packagesv1.BundleControllerActive,
			Detail: "using bundle v1-36-3", Conditions: ready},
	}}
	clusters := []flotillav1.Cluster{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w1", CreationTimestamp: created},
		Spec: flotillav1.ClusterSpec{KubernetesVersion: "v1.36.3", ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
			DatacenterRef: flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"}},
	}}
	clusters[0].Status.Workers.Ready, clusters[0].Status.Workers.Desired = 1, 2
	addons := &client.Addons{Proxies: []addonsv1.HelmChartProxy{{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "lonely"}}}}
	addons.Proxies[0].Spec.ChartName = "hello"
	bundle := &packagesv1.PackageBundle{Spec: packagesv1.PackageBundleSpec{Packages: []packagesv1.BundlePackage{{
		Name: "hello-stack", Description: "a stack", Versions: []packagesv1.PackageVersion{{Version: "1.0.0", Dependencies: []string{"hello-flotilla"}}, {Version: "0.9.0"}},
	}}}}

	tests := []struct {
		name, format string
		output       *listOutput
		want         string
	}{
		{name: "get packages", output: packagesOutput(pkgs, "w1", now), want: "" +
			"NAME    PACKAGE          CURRENT   TARGET   STATE       READY   AGE\n" +
			"hello   hello-flotilla   0.1.0     0.2.0    upgrading   -       5d\n" +
			"stack   hello-stack      1.0.0     1.0.0    installed   True    5d\n"},
		{name: "get packages -o wide", format: OutputWide, output: packagesOutput(pkgs, "w1", now), want: "" +
			"NAME    PACKAGE          CURRENT   TARGET   STATE       READY   AGE   UPGRADES      DETAIL\n" +
			"hello   hello-flotilla   0.1.0     0.2.0    upgrading   -       5d    0.2.0,0.3.0   upgrading hello-flotilla from 0.1.0 to 0.2.0\n" +
			"stack   hello-stack      1.0.0     1.0.0    installed   True    5d    -             -\n"},
		{name: "get packagebundles -o wide", format: OutputWide, output: packageBundlesOutput(bundles, now), want: "" +
			"NAME      KUBERNETES   BUILD   PACKAGES   STATE   AGE   SOURCE                            DETAIL\n" +
			"v1-36-3   1.36         3       2          valid   5d    127.0.0.1:5000/flotilla/bundles   -\n"},
		{name: "get packagebundlecontrollers", output: packageBundleControllersOutput(pbcs), want: "" +
			"NAME   KUBERNETES   ACTIVE BUNDLE   STATE    READY   DETAIL\n" +
			"w1     1.36         v1-36-3         active   True    using bundle v1-36-3\n"},
		{name: "get clusters -o wide", format: OutputWide, output: clustersOutput(clusters, now), want: "" +
			"NAMESPACE   NAME   TYPE       MANAGED BY   VERSION   WORKERS   PHASE   AGE   ENDPOINT   DATACENTER\n" +
			"default     w1     workload   mgmt         v1.36.3   1/2       -       5d    -          LocalDatacenterConfig/local\n"},
		{name: "get addons", output: addonsOutput(addons), want: "" +
			"NAMESPACE   ADDON    CLUSTER   CHART   VERSION   REVISION   STATUS   READY   REASON\n" +
			"fleet       lonely   <none>    hello   -         -          -        -       -\n"},
		{name: "list packages", output: bundlePackagesOutput(bundle), want: "" +
			"PACKAGE       VERSIONS      DEPENDENCIES     DESCRIPTION\n" +
			"hello-stack   1.0.0,0.9.0   hello-flotilla   a stack\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut := printed(t, tt.output, tt.format)
			NewWithT(t).Expect(out).To(Equal(tt.want))
			NewWithT(t).Expect(errOut).To(BeEmpty())
		})
	}
}

func TestAnEmptyListSaysWhatToDoOnTheErrorStream(t *testing.T) {
	g := NewWithT(t)
	out, errOut := printed(t, packagesOutput(nil, "w1", time.Now()), "")
	g.Expect(out).To(BeEmpty())
	g.Expect(errOut).To(Equal("No packages on cluster w1. Install one with `flotilla install package PACKAGE --cluster w1`.\n"))

	out, errOut = printed(t, packagesOutput(nil, "w1", time.Now()), OutputJSON)
	g.Expect(errOut).To(BeEmpty())
	g.Expect(out).To(Equal("{\n  \"kind\": \"PackageList\",\n  \"apiVersion\": \"packages.flotilla.dev/v1alpha1\",\n  \"metadata\": {},\n  \"items\": null\n}\n"))

	out, _ = printed(t, bundlePackagesOutput(&packagesv1.PackageBundle{}), "")
	g.Expect(out).To(Equal("PACKAGE   VERSIONS   DEPENDENCIES   DESCRIPTION\n"), "list packages prints its header alone")
}
