package clusterspec

// Template is the text/template of `flotilla generate clusterconfig --provider local`: a
// commented spec of a local cluster (the Cluster, its LocalDatacenterConfig and
// LocalMachineConfig). cluster/spec renders it with the command line, the supported versions and
// the options of `generate clusterconfig`.
const Template = `# Cluster spec for "{{.Name}}", printed by:
#   {{.Command}}
#
# Create the cluster with one of:
#   flotilla create cluster -f {{.Name}}.yaml
#       makes a management cluster (no --kubeconfig: it manages itself);
#   flotilla create cluster -f {{.Name}}.yaml --kubeconfig MGMT/MGMT.kubeconfig
#       makes a workload cluster, managed by the management cluster MGMT.
# Every field is checked strictly: a misspelt or unknown field is an error that names it.
---
# Cluster: what to build. The provider's configs further down say where and how.
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  # name: the cluster's name, a DNS label (lowercase letters, digits and '-'). The CLI writes
  # its kubeconfig to ./{{.Name}}/{{.Name}}.kubeconfig.
  name: {{.Name}}
  # namespace: where the cluster's objects live in the management cluster. Every document in
  # this file uses the same namespace.
  namespace: default
spec:
{{- if .Management}}
  # management: true makes a management cluster, which runs Flotilla's controllers and manages
  # itself and workload clusters. Create it without --kubeconfig.
  management: true
{{- else}}
  # management: false makes a workload cluster: create it with --kubeconfig naming the
  # management cluster that will manage it. Without --kubeconfig, ` + "`flotilla create cluster`" + `
  # creates a management cluster, which needs management: true (generate with --management).
  management: false
{{- end}}
  # kubernetesVersion: the Kubernetes minor version, in quotes. Supported: {{.Supported}}.
  kubernetesVersion: "{{.KubernetesVersion}}"
  controlPlane:
    # count: control plane instances. The local provider runs one hosted control plane per
    # cluster: etcd, kube-apiserver, kube-controller-manager and kube-scheduler as processes
    # on this machine. Keep 1.
    count: 1
    # endpoint: the API server's address. Leave it out and the provider picks a free port on
    # 127.0.0.1; once chosen it does not change.
    # endpoint:
    #   host: 127.0.0.1
    #   port: 6443
  # datacenterRef: the provider's datacenter config, defined in this file.
  datacenterRef:
    kind: LocalDatacenterConfig
    name: {{.Name}}
  # workerNodeGroups: groups of identical worker machines; each becomes a MachineDeployment
  # named <cluster>-<group name>, and its name is unique in the cluster (a DNS label of at most
  # 40 characters).
  workerNodeGroups:
    - name: {{.WorkerGroup}}
      # nodes: Simulated (the default) makes each worker a Node simulated by kwok (labelled
      # flotilla.dev/simulated=true), which also plays the Pods scheduled onto it: thousands fit
      # on one machine, and no Pod process runs. Real makes each worker a real node on this
      # machine: kubelet, containerd and runc in namespaces of their own (run as root, and build
      # them once: flotilla binaries build {{.KubernetesVersion}} --nodes). A group keeps its kind.
      nodes: Simulated
      # count: the number of workers. Change it to scale the group.
      count: {{.Workers}}
      # machineGroupRef: the machine config the group's machines are made from, defined in
      # this file.
      machineGroupRef:
        kind: LocalMachineConfig
        name: {{.Name}}-workers
      # labels: set on every Node of the group.
      # labels:
      #   example.com/tier: general
{{- if gt .RealWorkers 0}}
    - name: real
      # Real nodes (labelled flotilla.dev/simulated=false) whose Pods run for real, pulling their
      # images from the image mirror of the LocalDatacenterConfig below.
      nodes: Real
      count: {{.RealWorkers}}
      machineGroupRef:
        kind: LocalMachineConfig
        name: {{.Name}}-workers
{{- end}}
  # clusterNetwork: the address ranges of Pods and Services (these are the defaults). Real
  # nodes give each of them a /24 of the Pod range; both ranges exist only inside the nodes'
  # network namespaces.
  clusterNetwork:
    pods:
      - 192.168.0.0/16
    services:
      - 10.96.0.0/12
{{- if .Management}}
  # managementCluster: the management cluster that manages this one. A management cluster
  # manages itself.
  managementCluster:
    name: {{.Name}}
{{- else}}
  # managementCluster: the management cluster that manages this one. Leave it out: creating
  # the cluster with --kubeconfig fills it in.
  # managementCluster:
  #   name: mgmt
{{- end}}
  # gitOpsRef: keep this cluster's spec in Git. The CLI commits the spec to the repository of
  # the GitOpsConfig it names, and the management cluster applies what is committed there:
  # change a count in Git, commit, and the cluster scales. Set it when creating the cluster;
  # it cannot change later.
  # gitOpsRef:
  #   kind: GitOpsConfig
  #   name: fleet
---
# LocalDatacenterConfig: how the local provider runs the cluster's control plane.
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: {{.Name}}
  namespace: default
spec:
  # controllerManager: run kube-controller-manager, which makes Deployments create Pods.
  # Switch it off for large scale runs where only the API matters.
  controllerManager: true
  # scheduler: run kube-scheduler, which places Pods on the Nodes.
  scheduler: true
  # nodeNetwork: the host-side network of the cluster's real nodes, a range of 10.200.0.0/16 this
  # machine does not use; leave it out and a free /24 of it is chosen. A range outside it is an
  # admin's to set.
  # nodeNetwork: 10.200.0.0/24
  # imageMirror: the registry real nodes pull every image from (as the mirror of docker.io,
  # registry.k8s.io and ghcr.io), a loopback host:port: the embedded registry by default, filled
  # with 'flotilla registry start' and 'flotilla image build'. The management cluster's registry
  # mirror (ConfigMap flotilla-system/registry-mirror), when set, takes its place. Another
  # port than 5001 is an admin's to set.
  imageMirror: 127.0.0.1:5001
---
# LocalMachineConfig: what each simulated worker Node reports (a real node reports the host's).
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalMachineConfig
metadata:
  name: {{.Name}}-workers
  namespace: default
spec:
  # capacity: the Node's capacity and allocatable resources.
  capacity:
    cpu: "4"
    memory: 16Gi
    pods: "110"
# GitOpsConfig: the Git repository of cluster specs that spec.gitOpsRef names, laid out as
# clusters/<management>/cluster.yaml and clusters/<management>/workload-clusters/<name>/cluster.yaml.
# A management cluster's spec holds it; a workload cluster's may leave it out and use its
# management cluster's. To keep the specs in Git, uncomment it and spec.gitOpsRef above.
# ---
# apiVersion: cluster.flotilla.dev/v1alpha1
# kind: GitOpsConfig
# metadata:
#   name: fleet
#   namespace: default
# spec:
#   # repository: a Git URL (https://, ssh://, git@host:path) or the absolute path of a
#   # repository on the management cluster's machine, such as one made by
#   # ` + "`git init --bare /srv/fleet.git`" + `.
#   repository: /srv/fleet.git
#   # branch: the branch the specs are committed to and pulled from.
#   branch: main
#   # interval: how often the management cluster pulls the branch and applies what changed.
#   interval: 1m
#   # timeout: how long one fetch, clone or push may take before it fails.
#   timeout: 1m
#   # secretRef: a Secret in flotilla-system with the credentials the management cluster
#   # pulls with: username and password (HTTPS, or plain HTTP to this machine only), or
#   # identity and known_hosts (SSH). The CLI pushes with yours: FLOTILLA_GIT_USERNAME and
#   # FLOTILLA_GIT_PASSWORD, or your SSH agent.
#   # secretRef:
#   #   name: fleet-git
`
