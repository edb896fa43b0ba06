// Package values turns what a HelmChartProxy says about values into the values of one release
// in one cluster.
//
// A proxy's valuesTemplate is a Go text/template rendered once per selected cluster by Render,
// bounded in time and memory (see Bounds).
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
// keys), so whitespace-only differences do not count as changes. Both are at most
// MaxRenderedSize.
//
// # Bounds
//
// text/template cannot be interrupted, and Sprig's until, repeat or a string doubled in a loop
// allocate without limit, so a render in the manager's own process could hold a core for hours
// or exhaust its memory. Render therefore runs every template in a render worker: this same
// program started again as a child process (worker.go: RunWorkerIfRequested, called first thing
// in the program's main, turns the process into a worker), which limits its own address space (RLIMIT_AS, RenderMemoryLimit
// beyond what it holds at start), CPU time (RLIMIT_CPU) and goroutine stack, runs one render at
// a time and is killed when a render takes longer than RenderTimeLimit. The kernel kills a worker
// whose parent dies (Linux, pkg/tether). Up to four workers are kept for the next renders: a
// render costs a round trip through a pipe (about 0.15 ms), starting a worker far more. A render
// killed at the time limit having had almost no CPU time (a machine far too busy) wraps
// ErrRenderStarved, as does a worker that does not start within 10 s; a worker that dies for
// another reason than a limit wraps ErrRenderWorkerFailed. Nothing is known about the template
// then (RenderAgain), and the caller renders it again later.
// docs/proposals/2026-11-25-bounded-values-templates.md records why.
//
// The same workers render the templates of charts (ChartRenderer, which the manager gives its
// Helm engine as helm.Engine.Renderer): a pool of its own, with ChartRenderTimeLimit and
// ChartRenderMemoryLimit, whose errors name the chart's templates.
//
// The valuesFrom sources (ConfigMaps and Secrets) are read by FromSources and merged in order;
// Merge lays the rendered template over them. The digest a release records to tell whether its
// values changed is the Helm engine's (pkg/helm's ValuesHash).
package values
