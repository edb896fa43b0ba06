// Package controlplane runs the control plane of one Kubernetes cluster as local processes: etcd
// and kube-apiserver, and optionally kube-controller-manager, kube-scheduler and kwok. The local
// infrastructure provider runs workload control planes with it, the CLI its bootstrap cluster,
// and tests their API servers.
//
// # Use
//
//	set, err := binaries.Find(binaries.DefaultRoot(), "v1.36.3")
//	...
//	cfg := controlplane.Config{
//		Name:     "demo",
//		Dir:      controlplane.ClusterDir(controlplane.HomeDir(), "demo"),
//		Binaries: set,
//		ControllerManager: true, Scheduler: true, Kwok: true,
//	}
//	status, err := controlplane.Ensure(ctx, cfg) // starts or adopts; does not wait
//	err = controlplane.WaitReady(ctx, cfg)       // /readyz answers ok
//	kubeconfig, err := controlplane.AdminKubeconfig(cfg)
//	...
//	err = controlplane.Delete(ctx, cfg.Dir)      // stops everything, removes Dir
//
// Ensure is idempotent, non-blocking and cheap when everything runs (a few milliseconds: file
// reads and /proc lookups; no process is started and no key generated), so a reconciler calls it
// on every pass and requeues until Ready succeeds. It:
//
//   - creates the PKI when missing (package pki): a CA, kube-apiserver's serving certificate for
//     localhost, kubernetes, kubernetes.default, kubernetes.default.svc,
//     kubernetes.default.svc.cluster.local, 127.0.0.1, ::1, Config.Host and the first address of
//     the service range; a CA of etcd's own, and from it etcd's serving and peer certificates and
//     kube-apiserver's etcd client certificate;
//     client certificates and kubeconfigs for the admin (O=system:masters),
//     system:kube-controller-manager and system:kube-scheduler; the service account key pair.
//     Files are 0600 in 0700 directories. Config.CA replaces the CA (after a move), and the
//     leaves it did not sign are reissued;
//   - chooses kube-apiserver's port (Config.APIServerPort, or a free one) and etcd's client and
//     peer ports once, and keeps them in Dir/state.json so that a restart serves the same
//     endpoint. Ports are picked at random in [10000, start of the ephemeral range);
//   - adopts every process that runs (package process: pid file, live and not a zombie, same
//     command line, start time and executable), starts the missing ones in order (etcd,
//     kube-apiserver, kube-controller-manager, kube-scheduler, kwok) without waiting between
//     them, starts exited ones again under package process's restart policy (a process that
//     keeps exiting waits out a back-off and is reported with PID 0), restarts those whose
//     flags, binaries (a Kubernetes upgrade) or input files (certificates, kubeconfigs) changed,
//     and stops the optional ones Config no longer asks for. It never starts a duplicate;
//   - fails with an instruction when it cannot go on, before it starts anything: a missing
//     program ("run: flotilla binaries build v1.36.3"), kube-apiserver's port
//     held by another program (every process declares its ports, and they are checked first).
//
// Status.Processes lists the components, then any other process recorded in the directory (the
// manager of a management cluster), each with its restart history.
//
// Processes are detached (own session, no context): they outlive the program that started them,
// and a later program adopts them. Their records stay until Stop or Delete, and the supervisor
// of the Flotilla home (package supervisor) starts an exited one again from its record, even when
// no program calls Ensure: the control plane of a management cluster comes back while its own
// manager cannot run. Ensure, Stop and Delete on the same directory are serialised with it by
// the run directory's lock (Dir/run/.lock, process.Keeper.Lock), across goroutines and
// programs.
//
// Ready asks /readyz (with the admin certificate) once and returns /version's gitVersion.
// WaitReady polls it, keeps etcd and kube-apiserver running meanwhile as the supervisor does,
// and fails early, with the end of the log, when one of them crash loops or is not recorded.
// Stop sends SIGTERM to kwok, the scheduler, the controller manager, kube-apiserver and etcd in
// turn, waits up to StopTimeout (10 s) for each, then SIGKILL; the records go, the data stays.
// Delete stops, then removes Dir; it refuses a directory that holds no control plane. Describe
// reads what a directory recorded: its endpoint, version and Config.ManagedBy.
//
// # Directory layout
//
//	<Dir>/state.json                 host, ports, Kubernetes version, managed by
//	<Dir>/pki/                       ca.crt/key, apiserver.crt/key, etcd-ca.crt/key,
//	                                 etcd-server.crt/key, etcd-peer.crt/key,
//	                                 apiserver-etcd-client.crt/key, admin.crt/key,
//	                                 kube-controller-manager.crt/key, kube-scheduler.crt/key,
//	                                 sa.key/pub, admin.kubeconfig,
//	                                 kube-controller-manager.kubeconfig, kube-scheduler.kubeconfig
//	<Dir>/etcd/                      etcd data
//	<Dir>/kwok/kwok.yaml             kwok's Stages
//	<Dir>/logs/<process>.log         stdout and stderr
//	<Dir>/run/<process>.pid, .json   pid files and records (with restart histories)
//	<Dir>/run/.lock                  serialises Ensure, Stop, Delete and the supervisor
//
// # Flags, and why
//
// etcd listens on 127.0.0.1 only, with TLS and client certificate authentication on both of its
// ports: the client port (--client-cert-auth, --trusted-ca-file) and the raft peer port
// (--peer-client-cert-auth, --peer-trusted-ca-file, https peer URLs; there is one member, which
// etcd dials with its peer certificate). Both trust etcd's own CA (pki/etcd-ca.crt), not the
// cluster's, which signs the certificates of the cluster's users too (manager identities,
// kubelets): other users of the machine can neither read the cluster's Secrets through etcd nor
// talk raft to it (make the member step down, send it a snapshot). A directory made by an older
// version gets etcd's CA and peer certificate at its next Ensure, which reissues the etcd
// certificates the cluster's CA signed and restarts etcd and kube-apiserver; its member keeps
// the http:// peer URL it recorded at creation, which nothing dials (etcd answers https only).
// --unsafe-no-fsync is set only with Config.UnsafeNoFsync. Bootstrapping kube-apiserver writes a
// few hundred objects, each followed by an fsync: on a quiet two-core machine Ensure -> ready
// takes about 3.2 s either way, but while other programs write to the disk (builds, other
// clusters) it takes 6.5-10 s with fsync and stays at 3-4 s without. A machine crash can then
// lose the member: use it for simulated workload clusters, the ephemeral bootstrap cluster and
// tests, not for a management cluster whose state matters.
//
// kube-apiserver starts in a cgroup v2 group of its own whose connections the host lets through
// to this machine's addresses and the cluster's node network only (package nodenet, Egress):
// a Service proxy, webhook or APIService that a cluster's owner points at the LAN fails at once.
// Ensure makes the group and rules; Prepare puts them back after a restart of the machine (the
// supervisor of the home runs it before starting processes again); Delete removes them.
//
// kube-apiserver: --authorization-mode=RBAC (no kubelets here, so no Node authorizer, whose graph
// would also cost start time); --enable-priority-and-fairness=false (the max-in-flight limits
// are enough for one local client set, and ready comes sooner without the APF bootstrap);
// --profiling=false; service account tokens signed with sa.key (--service-account-issuer
// https://kubernetes.default.svc.cluster.local, as kubeadm); --allow-privileged=true, as kubeadm.
// Default admission plugins, so Pods need their ServiceAccount (created by the controller
// manager), as on a real cluster.
//
// kube-controller-manager and kube-scheduler: --secure-port=0 (v1.36 accepts it: "If 0, don't
// serve HTTPS at all"), so they take no port and many clusters share the machine without
// collisions; --leader-elect=false (one replica; a restarted process would otherwise wait up to
// 15 s for its own stale lease). The controller manager runs each controller with its own
// service account (--use-service-account-credentials, as kubeadm) and fills ServiceAccount
// tokens' ca.crt (--root-ca-file). It signs no CSRs (no --cluster-signing-cert-file): nothing
// asks a local cluster for certificates (its Nodes are kwok's, without kubelets), and each of
// the signing controller's four signers watches the key pair with an inotify instance of its
// own, of the 128 a Linux user has by default: with 20 clusters on one host these ran out, and
// a manager restarted then could not start (its webhook certificate watcher needs one).
//
// kwok: --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake (infrav1.KwokNodeAnnotation
// = KwokNodeAnnotationValue) and --manage-all-nodes=false, so only the Nodes the local provider
// creates are simulated; --config=Dir/kwok/kwok.yaml with kwok's default Stages
// (node-initialize, node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete: the kwok
// binary has none built in) and KWOK_WORKDIR=Dir/kwok so ~/.kwok is never read;
// --node-lease-duration-seconds=40, kubelet's, so that kube-controller-manager's node lifecycle
// controller sees the Nodes alive; --cidr=10.244.0.0/16 for the Pods' addresses (the default
// /24 runs out after 254 Pods). No --node-port or --server-address: kwok then serves nothing, so
// it takes no port either. It runs with the admin kubeconfig.
package controlplane
