// Package desired builds what the addon controllers want from what users wrote, with nothing
// written anywhere: the HelmReleaseProxy a HelmChartProxy asks for in one cluster, with its
// values template rendered for that cluster (ReleaseProxy, Render), and the Helm release
// a HelmReleaseProxy asks for, with its valuesFrom sources merged under its values and its
// registry credentials read (Release).
//
// The helmchartproxy and helmreleaseproxy reconcilers apply what these builders return; the CLI
// (`flotilla addons diff`) calls the same builders, so the diff it shows is exactly what the
// manager would install. The builders read through a client.Reader (the cluster's control plane
// and infrastructure objects, valuesFrom ConfigMaps and Secrets, registry Secrets) and never
// write.
//
// Release's errors about its input (values that are missing or no YAML mapping, credentials
// that are missing or incomplete) are *InputError, carrying the condition reason to report them
// with: the user fixes those, retrying soon does not.
package desired
