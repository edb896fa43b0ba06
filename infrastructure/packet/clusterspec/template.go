package clusterspec

// Template is the text/template of `flotilla generate clusterconfig --provider packet`: a
// commented spec of a Packet cluster (the Cluster, its PacketDatacenterConfig and
// PacketMachineConfigs). cluster/spec renders it with the command line, the supported versions
// and the options of `generate clusterconfig`.
const Template = `# Cluster spec for "{{.Name}}" on Equinix Metal (Packet), printed by:
#   {{.Command}}
#
# A Packet cluster is a workload cluster: create it from a management cluster. Its Metal API key
# and the API it is sent to belong to an admin: a PacketClusterIdentity (default: "default")
# that allows this namespace. An admin creating the cluster with the key in PACKET_API_KEY has
# the identity created when it is missing (key stored in flotilla-system/packet-credentials,
# which people who only create clusters cannot read; the API is PACKET_API_URL, the public one
# by default):
#   PACKET_API_KEY=... flotilla create cluster -f {{.Name}}.yaml --kubeconfig MGMT/MGMT.kubeconfig
# To try it without Equinix Metal, run the simulator and send the key there:
#   flotilla dev metal-api --listen 127.0.0.1:8089 --api-key "$PACKET_API_KEY"
#   PACKET_API_URL=http://127.0.0.1:8089/metal/v1 PACKET_API_KEY=... flotilla create cluster -f {{.Name}}.yaml ...
# Every field is checked strictly: a misspelt or unknown field is an error that names it.
---
apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  name: {{.Name}}
  namespace: default
spec:
  management: false
  # kubernetesVersion: the Kubernetes minor version, in quotes. Supported: {{.Supported}}.
  kubernetesVersion: "{{.KubernetesVersion}}"
  controlPlane:
    # count: control plane devices; the first runs kubeadm init, the others kubeadm join.
    # Use an odd number (1, 3, 5) for etcd quorum.
    count: 1
    # machineGroupRef: the PacketMachineConfig of the control plane devices.
    machineGroupRef:
      kind: PacketMachineConfig
      name: {{.Name}}-cp
    # endpoint: leave it out and the provider reserves an elastic IP for the API server
    # (port 6443); once chosen it does not change.
  datacenterRef:
    kind: PacketDatacenterConfig
    name: {{.Name}}
  workerNodeGroups:
    - name: {{.WorkerGroup}}
      # count: the number of worker devices. Change it to scale the group.
      count: {{.Workers}}
      machineGroupRef:
        kind: PacketMachineConfig
        name: {{.Name}}-workers
      # labels: set on every Node of the group.
      # labels:
      #   example.com/tier: general
  clusterNetwork:
    pods:
      - 192.168.0.0/16
    services:
      - 10.96.0.0/12
---
# PacketDatacenterConfig: where the devices are created.
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: PacketDatacenterConfig
metadata:
  name: {{.Name}}
  namespace: default
spec:
  # identityRef: the admin's PacketClusterIdentity whose key (and API) the devices are created
  # with; it must allow this namespace. Left out: the identity named "default".
  # identityRef:
  #   name: default
  # projectID: your Metal project's ID (the simulator creates it on first use).
  projectID: REPLACE-WITH-PROJECT-ID
  # metro: the metro code, such as da (Dallas), sv (Silicon Valley), am (Amsterdam).
  metro: da
  # facility: pin the devices to one facility of the metro.
  # facility: da11
  # vipManager: what keeps the control plane elastic IP on a healthy control plane node:
  # KUBE_VIP or CPEM.
  vipManager: KUBE_VIP
---
# PacketMachineConfig: the control plane devices.
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: PacketMachineConfig
metadata:
  name: {{.Name}}-cp
  namespace: default
spec:
  # plan: the device type.
  plan: c3.small.x86
  # os: the operating system; the bootstrap installs kubeadm from pkgs.k8s.io (Ubuntu, Debian).
  os: ubuntu_24_04
  billingCycle: hourly
  # sshAuthorizedKeys: public keys of the "flotilla" login user.
  # sshAuthorizedKeys:
  #   - ssh-ed25519 AAAA... you@example.com
---
# PacketMachineConfig: the worker devices.
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: PacketMachineConfig
metadata:
  name: {{.Name}}-workers
  namespace: default
spec:
  plan: m3.small.x86
  os: ubuntu_24_04
  billingCycle: hourly
`
