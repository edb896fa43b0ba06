package caaph

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// CAAPH's kinds.
var (
	HelmChartProxyList   = schema.GroupVersionKind{Group: "addons.cluster.x-k8s.io", Version: "v1alpha1", Kind: "HelmChartProxyList"}
	HelmReleaseProxyList = schema.GroupVersionKind{Group: "addons.cluster.x-k8s.io", Version: "v1alpha1", Kind: "HelmReleaseProxyList"}
)

// ProxyNameLabel is the label CAAPH puts on a HelmReleaseProxy: its HelmChartProxy's name.
const ProxyNameLabel = "helmreleaseproxy.addons.cluster.x-k8s.io/helmchartproxy-name"

// ImportedFromAnnotation is set on a converted proxy: the CAAPH proxy it comes from.
const ImportedFromAnnotation = "addons.flotilla.dev/imported-from"

// helmChartProxy is the part of CAAPH's HelmChartProxy that converts.
type helmChartProxy struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ClusterSelector   metav1.LabelSelector `json:"clusterSelector"`
		RepoURL           string               `json:"repoURL"`
		ChartName         string               `json:"chartName"`
		Version           string               `json:"version"`
		ReleaseName       string               `json:"releaseName"`
		ReleaseNamespace  string               `json:"namespace"`
		ValuesTemplate    string               `json:"valuesTemplate"`
		ReconcileStrategy string               `json:"reconcileStrategy"`
		Options           struct {
			Wait                     bool             `json:"wait"`
			WaitForJobs              bool             `json:"waitForJobs"`
			Atomic                   bool             `json:"atomic"`
			DisableHooks             bool             `json:"disableHooks"`
			DependencyUpdate         bool             `json:"dependencyUpdate"`
			DisableOpenAPIValidation bool             `json:"disableOpenAPIValidation"`
			Timeout                  *metav1.Duration `json:"timeout"`
			Install                  struct {
				CreateNamespace *bool `json:"createNamespace"`
				IncludeCRDs     bool  `json:"includeCRDs"`
			} `json:"install"`
			Upgrade struct {
				MaxHistory int32 `json:"maxHistory"`
				SkipCRDs   bool  `json:"skipCRDs"`
				Force      bool  `json:"force"`
			} `json:"upgrade"`
		} `json:"options"`
		Credentials *struct {
			Secret struct {
				Name string `json:"name"`
			} `json:"secret"`
		} `json:"credentials"`
		TLSConfig *struct {
			CASecret struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"caSecret"`
			InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify"`
		} `json:"tlsConfig"`
	} `json:"spec"`
}

// Converted is a Flotilla proxy and what of the CAAPH proxy it could not express.
type Converted struct {
	Proxy *addonsv1.HelmChartProxy
	// Warnings name the CAAPH settings left out, and what to do about each.
	Warnings []string
}

// Convert converts one CAAPH HelmChartProxy, with the HelmReleaseProxies CAAPH made for it
// (for the release names it generated), into a Flotilla HelmChartProxy of the same name and
// namespace. It fails when the release names differ between clusters.
func Convert(obj *unstructured.Unstructured, releases []unstructured.Unstructured) (Converted, error) {
	var in helmChartProxy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &in); err != nil {
		return Converted{}, fmt.Errorf("reading CAAPH HelmChartProxy %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	s := in.Spec
	releaseName, err := releaseNameOf(in.Name, s.ReleaseName, releases)
	if err != nil {
		return Converted{}, err
	}
	p := &addonsv1.HelmChartProxy{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: in.Namespace, Labels: in.Labels,
			Annotations: map[string]string{ImportedFromAnnotation: "addons.cluster.x-k8s.io/v1alpha1 HelmChartProxy " + in.Namespace + "/" + in.Name}},
		Spec: addonsv1.HelmChartProxySpec{
			ClusterSelector: s.ClusterSelector,
			ReleaseName:     releaseName,
			ValuesTemplate:  s.ValuesTemplate,
			ReleaseSpec: addonsv1.ReleaseSpec{
				ChartName: s.ChartName,
				RepoURL:   s.RepoURL,
				Version:   s.Version,
				Namespace: s.ReleaseNamespace,
				Options: addonsv1.HelmOptions{
					Wait:            s.Options.Wait,
					Atomic:          s.Options.Atomic,
					Timeout:         s.Options.Timeout,
					CreateNamespace: s.Options.Install.CreateNamespace,
					SkipCRDs:        s.Options.Upgrade.SkipCRDs,
					MaxHistory:      s.Options.Upgrade.MaxHistory,
				},
			},
		},
	}
	switch s.ReconcileStrategy {
	case "", string(addonsv1.ReconcileContinuous), string(addonsv1.ReconcileInstallOnce):
		p.Spec.ReconcileStrategy = addonsv1.ReconcileStrategy(s.ReconcileStrategy)
	default:
		return Converted{}, fmt.Errorf("CAAPH HelmChartProxy %s/%s: reconcileStrategy %q is neither Continuous nor InstallOnce", in.Namespace, in.Name, s.ReconcileStrategy)
	}
	c := Converted{Proxy: p}
	warn := func(set bool, msg string) {
		if set {
			c.Warnings = append(c.Warnings, msg)
		}
	}
	warn(s.Options.WaitForJobs, "options.waitForJobs: Flotilla waits for Jobs with wait: set options.wait")
	warn(s.Options.DisableHooks, "options.disableHooks: Flotilla always runs the chart's hooks")
	warn(s.Options.DependencyUpdate, "options.dependencyUpdate: Flotilla installs charts with their dependencies packaged (charts/); package them")
	warn(s.Options.Upgrade.Force, "options.upgrade.force: Flotilla never replaces objects by force")
	if s.TLSConfig != nil {
		p.Spec.Registry = &addonsv1.RegistryOptions{InsecureSkipTLSVerify: s.TLSConfig.InsecureSkipTLSVerify}
		if ca := s.TLSConfig.CASecret; ca.Name != "" {
			p.Spec.Registry.CASecretRef = &addonsv1.SecretReference{Name: ca.Name}
			warn(ca.Namespace != "" && ca.Namespace != in.Namespace,
				fmt.Sprintf("tlsConfig.caSecret is in namespace %s: copy Secret %s into %s (Flotilla reads the key ca.crt of a Secret in the proxy's namespace)", ca.Namespace, ca.Name, in.Namespace))
		}
	}
	warn(s.Credentials != nil, "credentials: CAAPH's Secret holds a Helm registry config; create a Secret with the keys username and password and set spec.registry.credentialsSecretRef")
	return c, nil
}

// releaseNameOf is the proxy's release name: CAAPH's spec.releaseName, else the one name its
// HelmReleaseProxies recorded, else empty (Flotilla then names the release after the proxy:
// nothing is installed to adopt).
func releaseNameOf(proxy, name string, releases []unstructured.Unstructured) (string, error) {
	if name != "" {
		return name, nil
	}
	byName := map[string][]string{} // release name: clusters
	for _, r := range releases {
		n, _, _ := unstructured.NestedString(r.Object, "spec", "releaseName")
		cluster, _, _ := unstructured.NestedString(r.Object, "spec", "clusterRef", "name")
		byName[n] = append(byName[n], cluster)
	}
	switch len(byName) {
	case 0:
		return "", nil
	case 1:
		for n := range byName {
			return n, nil
		}
	}
	var names []string
	for n, clusters := range byName {
		slices.Sort(clusters)
		names = append(names, fmt.Sprintf("%s (%s)", n, strings.Join(clusters, ", ")))
	}
	slices.Sort(names)
	return "", fmt.Errorf("CAAPH HelmChartProxy %s names no release, and CAAPH generated one per cluster: %s; a Flotilla proxy has one release name: set spec.releaseName in CAAPH's proxy to one of them, let CAAPH reinstall, then import again", proxy, strings.Join(names, "; "))
}
