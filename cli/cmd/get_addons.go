package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// GetAddonsOptions are the options of `flotilla get addons`.
type GetAddonsOptions struct {
	clientOptions
	outputOptions
	// Namespace limits the listing to one namespace; every namespace when empty.
	Namespace string
}

// NewGetAddonsCmd returns `flotilla get addons`.
func NewGetAddonsCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetAddonsOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "addons",
		Aliases: []string{"addon"},
		Short:   "List Helm addons (HelmChartProxies) and their state in each cluster",
		Long: `List the HelmChartProxies of the management cluster given with --kubeconfig and, for each
cluster a proxy selects, the state of its release there: chart version, Helm revision and
status, and whether it is Ready (with the reason when it is not).`,
		Example: `  flotilla get addons --kubeconfig mgmt/mgmt.kubeconfig
  flotilla get addons --kubeconfig mgmt/mgmt.kubeconfig -n fleet -o wide
  flotilla get addons --kubeconfig mgmt/mgmt.kubeconfig -o yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "only the addons of this namespace (default: every namespace)")
	o.addFlag(cmd, OutputWide, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the addons.
func (o *GetAddonsOptions) Run(ctx context.Context) error {
	addons, err := o.client.GetAddons(ctx, o.global.Kubeconfig, o.Namespace)
	if err != nil {
		return err
	}
	return addonsOutput(addons).print(o.IOStreams, o.Output)
}

// addonsOutput is the output of get addons: a row per proxy and cluster; for json and yaml a
// List of the HelmChartProxies and HelmReleaseProxies.
func addonsOutput(addons *client.Addons) *listOutput {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for i := range addons.Proxies {
		p := addons.Proxies[i]
		p.APIVersion, p.Kind = addonsv1.GroupVersion.String(), "HelmChartProxy"
		p.ManagedFields = nil
		list.Items = append(list.Items, runtimeRaw(&p))
	}
	for i := range addons.Releases {
		r := addons.Releases[i]
		r.APIVersion, r.Kind = addonsv1.GroupVersion.String(), "HelmReleaseProxy"
		r.ManagedFields = nil
		list.Items = append(list.Items, runtimeRaw(&r))
	}
	out := &listOutput{
		object:  list,
		empty:   "No addons found. Apply a HelmChartProxy (see docs/addons.md).",
		columns: []string{"NAMESPACE", "ADDON", "CLUSTER", "CHART", "VERSION", "REVISION", "STATUS", "READY", "REASON"},
		wide:    []string{"MESSAGE"},
	}
	for _, r := range addonRows(addons) {
		out.row(r.namespace, r.addon, r.cluster, r.chart, r.version, r.revision, r.status, r.ready, r.reason, r.message)
	}
	return out
}

// addonRow is one HelmChartProxy in one cluster.
type addonRow struct {
	namespace, addon, cluster, chart, version, revision, status, ready, reason, message string
}

// addonRows lists every proxy × selected cluster; a proxy selecting none gets one row.
func addonRows(a *client.Addons) []addonRow {
	byProxy := map[string][]addonsv1.HelmReleaseProxy{}
	for _, r := range a.Releases {
		key := r.Namespace + "/" + r.Labels[addonsv1.HelmChartProxyNameLabel]
		byProxy[key] = append(byProxy[key], r)
	}
	var rows []addonRow
	for _, p := range a.Proxies {
		releases := byProxy[p.Namespace+"/"+p.Name]
		if len(releases) == 0 {
			row := addonRow{namespace: p.Namespace, addon: p.Name, cluster: "<none>", chart: p.Spec.ChartName,
				version: orDash(p.Spec.Version), revision: "-", status: "-", ready: "-", reason: "-"}
			if c := meta.FindStatusCondition(p.Status.Conditions, addonsv1.ReadyCondition); c != nil {
				row.reason, row.message = c.Reason, c.Message
			}
			rows = append(rows, row)
			continue
		}
		for _, r := range releases {
			row := addonRow{namespace: p.Namespace, addon: p.Name, cluster: r.Spec.ClusterName, chart: r.Spec.ChartName,
				version: orDash(r.Status.ChartVersion), revision: "-", status: orDash(r.Status.ReleaseStatus), ready: "Unknown", reason: "-"}
			if r.Status.Revision > 0 {
				row.revision = fmt.Sprint(r.Status.Revision)
			}
			if c := meta.FindStatusCondition(r.Status.Conditions, addonsv1.ReadyCondition); c != nil {
				row.ready, row.reason, row.message = string(c.Status), c.Reason, c.Message
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// runtimeRaw encodes an object as an item of a metav1.List.
func runtimeRaw(obj runtime.Object) runtime.RawExtension {
	raw, err := json.Marshal(obj)
	if err != nil { // typed API objects always encode
		panic(fmt.Sprintf("encoding %T: %v", obj, err))
	}
	return runtime.RawExtension{Raw: raw}
}
