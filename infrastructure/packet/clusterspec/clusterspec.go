package clusterspec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// Kinds of the Packet provider's configs, valid in a Flotilla Cluster's refs.
const (
	DatacenterConfigKind = "PacketDatacenterConfig"
	MachineConfigKind    = "PacketMachineConfig"
)

// MachineKind is the kind of the Machines' infrastructure: CAPI clones a PacketMachine from the
// PacketMachineTemplate for every Machine.
const MachineKind = "PacketMachine"

// Input is what the objects are built from.
type Input struct {
	// Cluster is the Flotilla Cluster.
	Cluster *flotillav1.Cluster
	// Version is the full Kubernetes version, such as v1.36.3.
	Version string
	// Datacenter is the PacketDatacenterConfig spec.datacenterRef names.
	Datacenter *infrav1.PacketDatacenterConfig
	// ControlPlaneMachine is the PacketMachineConfig spec.controlPlane.machineGroupRef names.
	ControlPlaneMachine *infrav1.PacketMachineConfig
	// WorkerMachines are the PacketMachineConfigs of the worker node groups, by group name.
	WorkerMachines map[string]*infrav1.PacketMachineConfig
}

// ControlPlaneTemplateName is the name of the control plane's PacketMachineTemplate.
func ControlPlaneTemplateName(cluster string) string { return cluster + "-control-plane" }

// InfrastructureRef is the CAPI Cluster's spec.infrastructureRef: the PacketCluster.
func InfrastructureRef(cluster string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: cluster}
}

// ControlPlaneRef is the CAPI Cluster's spec.controlPlaneRef: the KubeadmControlPlane.
func ControlPlaneRef(cluster string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: kubeadmcontrolplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: cluster}
}

// Objects returns every object of the cluster in the order to apply them: the CAPI Cluster, the
// PacketCluster, the control plane's template and KubeadmControlPlane, then per worker group its
// templates and MachineDeployment. Objects are labelled with the cluster's name; the caller sets
// owner references.
func Objects(in Input) ([]ctrlclient.Object, error) {
	if in.Cluster == nil || in.Datacenter == nil || in.ControlPlaneMachine == nil {
		return nil, fmt.Errorf("building the Packet cluster: the Cluster, its PacketDatacenterConfig and the control plane's PacketMachineConfig are required")
	}
	objs := []ctrlclient.Object{CAPICluster(in.Cluster), PacketCluster(in.Cluster, in.Datacenter),
		MachineTemplate(in.Cluster, ControlPlaneTemplateName(in.Cluster.Name), in.ControlPlaneMachine, nil),
		KubeadmControlPlane(in)}
	for _, group := range in.Cluster.Spec.WorkerNodeGroups {
		mc, ok := in.WorkerMachines[group.Name]
		if !ok {
			return nil, fmt.Errorf("building the Packet cluster: worker node group %q has no PacketMachineConfig", group.Name)
		}
		name := capiobjects.GroupName(in.Cluster.Name, group.Name)
		objs = append(objs,
			MachineTemplate(in.Cluster, name, mc, map[string]string{flotillav1.WorkerNodeGroupLabel: group.Name}),
			KubeadmConfigTemplate(in.Cluster, group, mc, in.Version),
			MachineDeployment(in.Cluster, group, in.Version))
	}
	return objs, nil
}

func labels(c *flotillav1.Cluster, extra map[string]string) map[string]string {
	l := capiobjects.OwnedLabels(c)
	maps.Copy(l, extra)
	return l
}

// CAPICluster is the CAPI Cluster (capiobjects.Cluster) pointing at the PacketCluster and
// KubeadmControlPlane of the same name.
func CAPICluster(c *flotillav1.Cluster) *clusterv1.Cluster {
	capi := capiobjects.Cluster(c)
	capi.Spec.InfrastructureRef = InfrastructureRef(c.Name)
	capi.Spec.ControlPlaneRef = ControlPlaneRef(c.Name)
	return capi
}

// PacketCluster is the infrastructure cluster: the datacenter config's identity (whose key
// and API endpoint the provider uses), project and metro, and the endpoint when the Flotilla
// Cluster fixes one.
func PacketCluster(c *flotillav1.Cluster, dc *infrav1.PacketDatacenterConfig) *infrav1.PacketCluster {
	pc := &infrav1.PacketCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "PacketCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: labels(c, nil)},
		Spec: infrav1.PacketClusterSpec{
			IdentityRef: &infrav1.PacketClusterIdentityReference{Name: infrav1.DefaultPacketClusterIdentity},
			ProjectID:   dc.Spec.ProjectID,
			Metro:       dc.Spec.Metro,
			Facility:    dc.Spec.Facility,
			VIPManager:  dc.Spec.VIPManager,
		},
	}
	if ref := dc.Spec.IdentityRef; ref != nil && ref.Name != "" {
		pc.Spec.IdentityRef.Name = ref.Name
	}
	if pc.Spec.VIPManager == "" {
		pc.Spec.VIPManager = infrav1.VIPManagerKubeVIP
	}
	if ep := c.Spec.ControlPlane.Endpoint; ep != nil {
		pc.Spec.ControlPlaneEndpoint = infrav1.APIEndpoint{Host: ep.Host, Port: ep.Port}
	}
	return pc
}

// MachineTemplate is a PacketMachineTemplate from a machine config.
func MachineTemplate(c *flotillav1.Cluster, name string, mc *infrav1.PacketMachineConfig, extraLabels map[string]string) *infrav1.PacketMachineTemplate {
	spec := infrav1.PacketMachineSpec{
		Plan:                  mc.Spec.Plan,
		OS:                    mc.Spec.OS,
		BillingCycle:          mc.Spec.BillingCycle,
		Tags:                  append([]string(nil), mc.Spec.Tags...),
		HardwareReservationID: mc.Spec.HardwareReservationID,
	}
	if spec.OS == "" {
		spec.OS = DefaultOS
	}
	if spec.BillingCycle == "" {
		spec.BillingCycle = DefaultBillingCycle
	}
	return &infrav1.PacketMachineTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "PacketMachineTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, extraLabels)},
		Spec:       infrav1.PacketMachineTemplateSpec{Template: infrav1.PacketMachineTemplateResource{Spec: spec}},
	}
}

// KubeadmControlPlane is the control plane: count machines of the control plane template, kubeadm
// init on the first and join on the others, replaced one at a time (maxSurge 1) on a change.
func KubeadmControlPlane(in Input) *kubeadmcontrolplanev1.KubeadmControlPlane {
	c := in.Cluster
	count := c.Spec.ControlPlane.Count
	if count == 0 {
		count = 1
	}
	nodeRegistration := nodeRegistration(nil)
	spec := bootstrapv1.KubeadmConfigSpec{
		Format:               bootstrapv1.CloudConfig,
		InitConfiguration:    bootstrapv1.InitConfiguration{NodeRegistration: nodeRegistration},
		JoinConfiguration:    bootstrapv1.JoinConfiguration{NodeRegistration: nodeRegistration},
		PreKubeadmCommands:   append(installCommands(in.Version), controlPlaneEndpointCommands()...),
		Users:                users(in.ControlPlaneMachine),
		ClusterConfiguration: bootstrapv1.ClusterConfiguration{},
	}
	return &kubeadmcontrolplanev1.KubeadmControlPlane{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeadmcontrolplanev1.GroupVersion.String(), Kind: "KubeadmControlPlane"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: labels(c, nil)},
		Spec: kubeadmcontrolplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To(count),
			Version:  in.Version,
			MachineTemplate: kubeadmcontrolplanev1.KubeadmControlPlaneMachineTemplate{
				Spec: kubeadmcontrolplanev1.KubeadmControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachineTemplate", Name: ControlPlaneTemplateName(c.Name),
					},
				},
			},
			KubeadmConfigSpec: spec,
			Rollout: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutSpec{
				Strategy: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutStrategy{
					Type: kubeadmcontrolplanev1.RollingUpdateStrategyType,
					RollingUpdate: kubeadmcontrolplanev1.KubeadmControlPlaneRolloutStrategyRollingUpdate{
						MaxSurge: ptr.To(intstr.FromInt32(1)),
					},
				},
			},
		},
	}
}

// KubeadmConfigTemplate is the bootstrap template of a worker group: kubeadm join, the group's
// labels on the kubelet.
func KubeadmConfigTemplate(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, mc *infrav1.PacketMachineConfig, version string) *bootstrapv1.KubeadmConfigTemplate {
	return &bootstrapv1.KubeadmConfigTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "KubeadmConfigTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name: capiobjects.GroupName(c.Name, group.Name), Namespace: c.Namespace,
			Labels: labels(c, map[string]string{flotillav1.WorkerNodeGroupLabel: group.Name}),
		},
		Spec: bootstrapv1.KubeadmConfigTemplateSpec{
			Template: bootstrapv1.KubeadmConfigTemplateResource{
				Spec: bootstrapv1.KubeadmConfigSpec{
					Format:             bootstrapv1.CloudConfig,
					JoinConfiguration:  bootstrapv1.JoinConfiguration{NodeRegistration: nodeRegistration(group.Labels)},
					PreKubeadmCommands: installCommands(version),
					Users:              users(mc),
				},
			},
		},
	}
}

// MachineDeployment is a worker group's MachineDeployment (capiobjects.MachineDeployment): its
// machines bootstrap from the group's KubeadmConfigTemplate on PacketMachines.
func MachineDeployment(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, version string) *clusterv1.MachineDeployment {
	return capiobjects.MachineDeployment(c, group, version, capiobjects.Workers{
		Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate", Name: capiobjects.GroupName(c.Name, group.Name),
		}},
		MachineTemplateKind: "PacketMachineTemplate",
	})
}

// nodeRegistration registers the kubelet under the device's hostname with the Equinix Metal
// provider ID (cloud-init's instance ID is the device ID) and an external cloud provider, with
// nodeLabels as --node-labels.
func nodeRegistration(nodeLabels map[string]string) bootstrapv1.NodeRegistrationOptions {
	args := []bootstrapv1.Arg{
		{Name: "cloud-provider", Value: ptr.To("external")},
		{Name: "provider-id", Value: ptr.To(infrav1.PacketProviderIDPrefix + "{{ v1.instance_id }}")},
	}
	if len(nodeLabels) > 0 {
		pairs := make([]string, 0, len(nodeLabels))
		for _, k := range slices.Sorted(maps.Keys(nodeLabels)) {
			pairs = append(pairs, k+"="+nodeLabels[k])
		}
		args = append(args, bootstrapv1.Arg{Name: "node-labels", Value: ptr.To(strings.Join(pairs, ","))})
	}
	return bootstrapv1.NodeRegistrationOptions{Name: "{{ v1.local_hostname }}", KubeletExtraArgs: args}
}

// installCommands install containerd and the kubelet, kubeadm and kubectl of version from
// pkgs.k8s.io, and prepare the kernel for Kubernetes networking.
func installCommands(version string) []string {
	v := strings.TrimPrefix(version, "v")
	minor := v
	if parsed, err := kubeversion.Parse(version); err == nil {
		minor = parsed.MinorString()
	}
	repo := "https://pkgs.k8s.io/core:/stable:/v" + minor + "/deb/"
	return []string{
		"swapoff -a",
		"modprobe overlay && modprobe br_netfilter",
		"sysctl -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1",
		"apt-get update && apt-get install -y apt-transport-https ca-certificates curl gpg jq containerd",
		"mkdir -p /etc/containerd && containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' > /etc/containerd/config.toml && systemctl restart containerd",
		"mkdir -p /etc/apt/keyrings && curl -fsSL " + repo + "Release.key | gpg --dearmor -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg",
		"echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] " + repo + " /' > /etc/apt/sources.list.d/kubernetes.list",
		"apt-get update && apt-get install -y kubelet=" + v + "-* kubeadm=" + v + "-* kubectl=" + v + "-* && apt-mark hold kubelet kubeadm kubectl",
	}
}

// controlPlaneEndpointCommands bind the control plane elastic IP, as the Metal metadata service
// lists it once assigned, to the loopback interface, so the API server answers on it.
func controlPlaneEndpointCommands() []string {
	return []string{
		`EIP=$(curl -fsSL https://metadata.platformequinix.com/metadata | jq -r '.network.addresses[] | select(.public and (.management | not) and .address_family == 4) | .address' | head -n1); ` +
			`if [ -n "$EIP" ]; then ip addr add "$EIP/32" dev lo; fi`,
	}
}

// users is the login user of a machine config's SSH keys, when it has any.
func users(mc *infrav1.PacketMachineConfig) []bootstrapv1.User {
	if mc == nil || len(mc.Spec.SSHAuthorizedKeys) == 0 {
		return nil
	}
	return []bootstrapv1.User{{
		Name: "flotilla", Sudo: "ALL=(ALL) NOPASSWD:ALL", Shell: "/bin/bash",
		SSHAuthorizedKeys: append([]string(nil), mc.Spec.SSHAuthorizedKeys...),
	}}
}
