// Package inmemory runs Cluster API's in-memory infrastructure provider — the DevCluster and
// DevMachine provider of sigs.k8s.io/cluster-api/test (infrastructure/docker) with its in-memory
// backend, a provider Flotilla did not write — for a Flotilla management cluster. Its workload
// clusters are stamped from a ClusterClass (Flotilla Clusters with spec.topology); their machines,
// etcd members and API servers are simulated in memory, many clusters in one process, which is
// how one machine holds hundreds of them.
//
// # Processes
//
// The manager's "inmemory" component (Setup) runs the provider process: on the leader, once the
// management cluster serves the Dev CRDs and holds a DevCluster, it starts it — the same binary,
// `flotilla inmemory-provider` (RunProcessIfRequested) — and restarts it whenever it ends, under
// the restart policy of Flotilla's local processes (package process: at once after a run of 30 s,
// else after 1 s doubling up to a minute); it stops it with the manager. Its log is
// <home>/inmemory/provider.log, its pid <home>/inmemory/provider.pid. The process reads the
// management cluster's credentials on stdin, never from a file or its command line, and runs
// Cluster API's DevCluster, DevMachine and DevMachineTemplate reconcilers against it
// (RunProcess).
//
// # Network: loopback only
//
// Cluster API's in-memory server listens on every address (":PORT") for each workload cluster,
// and its debug server on ":19000". So the process runs in a network namespace of its own with
// only a loopback interface (the component starts it so; this needs CAP_SYS_ADMIN): nothing
// outside the process reaches those listeners. Through the host's network namespace, which the
// component hands it as an open file (netns.go), the process reaches the management cluster and
// serves each workload cluster's endpoint on 127.0.0.1:PORT of the host (gateway.go), with a
// serving certificate signed by the cluster's CA and answering only clients with a certificate
// signed by it. Ports come in blocks of 1000 from 20000 (ports.go), the first block free on the
// host, so two management clusters on one machine do not collide; a restarted process keeps the
// ports of the existing clusters.
//
// # Restarts
//
// The in-memory store lives as long as the process. When the process ends (killed, crashed) the
// next one rebuilds every cluster from the management cluster's objects, as Cluster API's
// backend does after a restart of its own controller: the DevCluster's listener on the port it
// had, and each DevMachine's cloud machine, Node, etcd member and API server. Cluster API's
// objects are never created twice: the provider creates none of them, it only reconciles the
// Machines Cluster API created. What the workload clusters held beyond that (objects Helm
// installed) is gone until its owner installs it again (an addon at its HelmReleaseProxy's next
// reconcile).
//
// # What the gateway adds to the in-memory API server
//
// Cluster API's in-memory API server serves what Cluster API needs. The gateway serves what Helm
// and Flotilla's controllers need besides (extensions.go): /version and health endpoints,
// server-side apply (apply.go), metadata-only gets, lists and watches (metadata.go), unconditional
// updates, a Status for a deletion, ReplicaSets as an empty read-only collection
// (replicasets.go), and workloads that become available (workloads.go). docs/providers.md lists
// them with what is still not served.
package inmemory
