// Package registrymirror reads the registry mirror a pull goes through: the management cluster's
// (the ConfigMap flotilla-system/registry-mirror and the credentials Secret it names), or one a
// PackageBundleController or HelmChartProxy names for its own pulls, which takes precedence.
//
// A mirror is a registry holding copies of other registries' repositories at the same paths
// (`flotilla packages import` fills one). With a mirror set, every bundle and chart pull of the
// manager goes to the mirror with the mirror's own credentials and CA (registryconn.Config.Route):
// the original registry is never reached and its credentials never go to the mirror.
//
// A mirror is checked where it is read (registryconn.SplitRegistry): an invalid one is an error
// naming the field, never a silent fallback to the original registry.
package registrymirror
