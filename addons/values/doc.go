// Package values turns what a HelmChartProxy says about values into the values of one release
// in one cluster.
//
// A proxy's valuesTemplate is a Go text/template rendered once per selected cluster by Render.
// The template sees the cluster's objects as their full content, the way `kubectl get -o yaml`
// shows them, so templates written for other CAPI Helm addon providers keep working:
//
//	controller:
//	  clusterName: {{ .Cluster.metadata.name }}
//	  env: {{ index .Cluster.metadata.labels "env" | default "dev" }}
//	  podCIDR: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 }}
//	  endpoint: {{ .ControlPlane.spec.endpoint.host }}
//
// .Cluster is the Cluster API Cluster, .ControlPlane and .InfraCluster the objects its
// controlPlaneRef and infrastructureRef name (empty maps when it names none). A key that does not
// exist is an error naming the line, not a silent "<no value>": use index (which yields nothing
// for a missing key) with default for optional fields. The functions are Sprig's repeatable ones
// plus toYaml, fromYaml and toJson; everything that reads the environment, the network, files,
// the clock or randomness is left out, so the same objects always render the same values and a
// resync never upgrades a release for nothing.
//
// The rendered text must be a YAML mapping; Render returns it re-encoded canonically (sorted
// keys), so whitespace-only differences do not count as changes.
//
// The valuesFrom sources (ConfigMaps and Secrets) are read by FromSources and merged in order;
// Merge lays the rendered template over them. The digest a release records to tell whether its
// values changed is the Helm engine's (pkg/helm's ValuesHash).
package values
