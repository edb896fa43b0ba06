package spec

// InMemoryClusterClass is the name of the ClusterClass `generate clusterconfig --provider
// inmemory` writes, shared by every in-memory cluster of a namespace.
const InMemoryClusterClass = "in-memory"

// inMemoryTemplate is the spec of a cluster of Cluster API's in-memory provider: a Cluster of
// the ClusterClass "in-memory", with the class and its templates (what an admin provides).
// Cluster API's own in-memory class (test/infrastructure/docker/templates/clusterclass-in-memory.yaml)
// takes 10 s to "boot" each machine; this one boots them at once, which is what a development
// management cluster wants.
const inMemoryTemplate = `# Cluster spec for "{{.Name}}", printed by:
#   {{.Command}}
#
# A workload cluster of Cluster API's in-memory provider, a provider Flotilla did not write: its
# machines and API server are simulated in memory, in a process the management cluster's manager
# runs. It serves the Kubernetes API of a real cluster closely enough for Cluster API, packages
# and addons, at a few megabytes a cluster, and runs no Pods. Create it with:
#   flotilla create cluster -f {{.Name}}.yaml --kubeconfig MGMT/MGMT.kubeconfig
# Every field of the Cluster is checked strictly: a misspelt or unknown field is an error that
# names it. The ClusterClass and templates further down are checked by the management cluster.
---
# Cluster: what to build, from the ClusterClass spec.topology.class names.
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  # name: the cluster's name, a DNS label. The CLI writes its kubeconfig to
  # ./{{.Name}}/{{.Name}}.kubeconfig.
  name: {{.Name}}
  # namespace: where the cluster's objects live in the management cluster; its ClusterClass is
  # in the same namespace.
  namespace: default
spec:
  # management: a cluster of a ClusterClass is a workload cluster.
  management: false
  # kubernetesVersion: the Kubernetes minor version, in quotes. Supported: {{.Supported}}.
  # Change it to upgrade: the control plane, then the workers, move to the new version.
  kubernetesVersion: "{{.KubernetesVersion}}"
  controlPlane:
    # count: control plane machines.
    count: 1
  # topology: the ClusterClass the cluster is stamped from, in this namespace.
  topology:
    class: ` + InMemoryClusterClass + `
    # variables: values of the class's variables, each checked against the class's schema
    # (this class defines none).
    # variables:
    #   - name: someVariable
    #     value: "some value"
  # workerNodeGroups: groups of identical workers; each names a worker class of the ClusterClass
  # and becomes a MachineDeployment. Change count to scale a group.
  workerNodeGroups:
    - name: {{.WorkerGroup}}
      class: default-worker
      count: {{.Workers}}
  # clusterNetwork: the address ranges of Pods and Services (these are the defaults).
  clusterNetwork:
    pods:
      - 192.168.0.0/16
    services:
      - 10.96.0.0/12
  # gitOpsRef: keep this cluster's spec in Git (see the local provider's spec); set it when
  # creating the cluster.
  # gitOpsRef:
  #   kind: GitOpsConfig
  #   name: fleet
# What follows is what an admin of the management cluster provides: the ClusterClass and the
# templates it references. Creating the cluster applies them first (again, unchanged, for every
# in-memory cluster of the namespace). A user who may only create clusters (the
# flotilla-cluster-creator role) cannot write them: remove them from the file and name the class
# the admin put in the namespace.
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata:
  name: ` + InMemoryClusterClass + `
  namespace: default
spec:
  infrastructure:
    templateRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
      kind: DevClusterTemplate
      name: ` + InMemoryClusterClass + `
  controlPlane:
    templateRef:
      apiVersion: controlplane.cluster.x-k8s.io/v1beta2
      kind: KubeadmControlPlaneTemplate
      name: ` + InMemoryClusterClass + `-control-plane
    machineInfrastructure:
      templateRef:
        apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
        kind: DevMachineTemplate
        name: ` + InMemoryClusterClass + `-control-plane
  workers:
    machineDeployments:
      - class: default-worker
        bootstrap:
          templateRef:
            apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
            kind: KubeadmConfigTemplate
            name: ` + InMemoryClusterClass + `-default-worker
        infrastructure:
          templateRef:
            apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
            kind: DevMachineTemplate
            name: ` + InMemoryClusterClass + `-default-worker
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevClusterTemplate
metadata:
  name: ` + InMemoryClusterClass + `
  namespace: default
spec:
  template:
    spec:
      backend:
        inMemory: {}
---
# The control plane: Cluster API's kubeadm control plane provider, whose kubeadm runs are
# simulated by the in-memory backend.
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlaneTemplate
metadata:
  name: ` + InMemoryClusterClass + `-control-plane
  namespace: default
spec:
  template:
    spec:
      kubeadmConfigSpec:
        clusterConfiguration:
          apiServer:
            certSANs:
              - localhost
              - 127.0.0.1
---
# Machines boot at once: a startupDuration under each of vm, node, apiServer and etcd (such as
# "10s", with a startupJitter such as "0.2") simulates a slower infrastructure.
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachineTemplate
metadata:
  name: ` + InMemoryClusterClass + `-control-plane
  namespace: default
spec:
  template:
    spec:
      backend:
        inMemory: {}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachineTemplate
metadata:
  name: ` + InMemoryClusterClass + `-default-worker
  namespace: default
spec:
  template:
    spec:
      backend:
        inMemory: {}
---
# The workers' kubeadm configuration: in-memory machines run no kubelet, so it is only
# Cluster API's bootstrap provider that reads it.
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata:
  name: ` + InMemoryClusterClass + `-default-worker
  namespace: default
spec:
  template:
    spec:
      joinConfiguration:
        nodeRegistration:
          criSocket: unix:///var/run/containerd/containerd.sock
`
