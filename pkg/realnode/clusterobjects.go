package realnode

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// The objects a cluster with real nodes needs in its API, as kubeadm makes them for its nodes:
// bootstrap tokens and the RBAC that lets kubelets join with them (TLS bootstrap), the RBAC of
// kube-proxy (which runs with its kubelet's credentials), and CoreDNS. Builders are pure; the
// local provider applies their objects with server-side apply.

// BootstrapGroup is the extra group of the bootstrap tokens of real nodes.
const BootstrapGroup = "system:bootstrappers:flotilla:nodes"

// SimulatedLabel is the label of local Nodes that says whether kwok simulates them ("true") or
// they are real ("false"), as infrav1.SimulatedNodeLabel.
const SimulatedLabel = "flotilla.dev/simulated"

// BootstrapTokenTTL is how long a bootstrap token is valid: long enough for a node that waits for
// its control plane, short enough not to matter once it has joined (the LocalMachine reconciler
// deletes it then, and kube-controller-manager's token cleaner after it expires).
const BootstrapTokenTTL = time.Hour

// NewBootstrapToken returns a new token, "<id>.<secret>" ([a-z0-9]{6}.[a-z0-9]{16}).
func NewBootstrapToken() string {
	t := strings.ToLower(rand.Text()) // 26 characters of [a-z2-7], 130 random bits
	return t[:6] + "." + t[6:22]
}

// TokenNodeLabel on a bootstrap token's Secret names the node it was made for.
const TokenNodeLabel = "flotilla.dev/real-node" //nolint:gosec // a label name, not a credential

// BootstrapTokenSecret returns the Secret that makes token valid until expires, for
// authentication only, in group BootstrapGroup, for the node named node (TokenNodeLabel).
func BootstrapTokenSecret(token, node string, expires time.Time) (*corev1.Secret, error) {
	id, secret, ok := strings.Cut(token, ".")
	if !ok || len(id) != 6 || len(secret) != 16 {
		return nil, fmt.Errorf("a bootstrap token has the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      BootstrapTokenSecretName(token),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{TokenNodeLabel: node},
		},
		Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"description":                    "Joins the real node " + node + " (Flotilla)",
			"token-id":                       id,
			"token-secret":                   secret,
			"expiration":                     expires.UTC().Format(time.RFC3339),
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              BootstrapGroup,
		},
	}, nil
}

// BootstrapTokenSecretName is the name of the Secret of token: bootstrap-token-<id>.
func BootstrapTokenSecretName(token string) string {
	id, _, _ := strings.Cut(token, ".")
	return "bootstrap-token-" + id
}

// clusterRoleBinding binds role to the subjects.
func clusterRoleBinding(name, role string, groups ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return b
}

// KubeletClientUser is the user kube-apiserver authenticates as to kubelets
// (controlplane.KubeletClientUser).
const KubeletClientUser = "kube-apiserver-kubelet-client"

// kubeletAPIAdmin lets kube-apiserver use the kubelets' API (logs, exec, port-forward).
func kubeletAPIAdmin() *rbacv1.ClusterRoleBinding {
	b := clusterRoleBinding("flotilla:kube-apiserver-kubelet-client", "system:kubelet-api-admin")
	b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KubeletClientUser}}
	return b
}

// ClusterObjects returns what a cluster needs for real nodes: the RBAC of TLS bootstrap (the
// tokens' group may create certificate signing requests, kube-controller-manager approves those
// of new kubelets and those that renew a kubelet's certificate), kube-proxy's RBAC for the group
// of nodes, and CoreDNS at dnsIP running images.DNS (see CoreDNS).
func ClusterObjects(dnsIP netip.Addr, images NodeImages) []ctrlclient.Object {
	objects := []ctrlclient.Object{
		clusterRoleBinding("flotilla:kubelet-bootstrap", "system:node-bootstrapper", BootstrapGroup),
		clusterRoleBinding("flotilla:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", BootstrapGroup),
		clusterRoleBinding("flotilla:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"),
		clusterRoleBinding("flotilla:node-proxier", "system:node-proxier", "system:nodes"),
		kubeletAPIAdmin(),
	}
	return append(objects, CoreDNS(dnsIP, images.DNS)...)
}

// DNSServiceIP returns the address of the cluster DNS Service: the tenth of the Service range,
// as kubeadm chooses it.
func DNSServiceIP(serviceCIDR string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service range %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return netip.Addr{}, fmt.Errorf("service range %s is too small for the DNS Service", p)
	}
	return a, nil
}

// corefile answers the names of the cluster's Services and Pods, and nothing else. Its server
// block serves the cluster's zone and the reverse zones alone: a name of another zone is refused
// (REFUSED) without a plugin seeing it, and a name or an address of those zones that the cluster
// does not hold is answered NXDOMAIN. There is no forward plugin (and so no loop to detect):
// CoreDNS asks no other server.
const corefile = ClusterDomain + ` in-addr.arpa ip6.arpa {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes ` + ClusterDomain + ` in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
    }
    cache 30
    reload
    loadbalance
}
`

// CoreDNS returns the cluster DNS: CoreDNS (image, DNSImage pinned by digest: NodeImages.DNS)
// as the Deployment coredns in kube-system, on real nodes only, behind the Service kube-dns at
// dnsIP, with the RBAC its kubernetes plugin needs.
func CoreDNS(dnsIP netip.Addr, image string) []ctrlclient.Object {
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := func(kind, name string) (metav1.TypeMeta, metav1.ObjectMeta) {
		apiVersion := "v1"
		switch kind {
		case "ClusterRole", "ClusterRoleBinding":
			apiVersion = rbacv1.SchemeGroupVersion.String()
		case "Deployment":
			apiVersion = appsv1.SchemeGroupVersion.String()
		}
		om := metav1.ObjectMeta{Name: name, Labels: labels}
		if kind != "ClusterRole" && kind != "ClusterRoleBinding" {
			om.Namespace = metav1.NamespaceSystem
		}
		return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}, om
	}
	sa := &corev1.ServiceAccount{}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "coredns")
	role := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	role.TypeMeta, role.ObjectMeta = meta("ClusterRole", "system:coredns")
	binding := &rbacv1.ClusterRoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:coredns"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: metav1.NamespaceSystem}},
	}
	binding.TypeMeta, binding.ObjectMeta = meta("ClusterRoleBinding", "system:coredns")
	config := &corev1.ConfigMap{Data: map[string]string{"Corefile": corefile}}
	config.TypeMeta, config.ObjectMeta = meta("ConfigMap", "coredns")
	service := &corev1.Service{Spec: corev1.ServiceSpec{
		ClusterIP: dnsIP.String(),
		Selector:  labels,
		Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
		},
	}}
	service.TypeMeta, service.ObjectMeta = meta("Service", "kube-dns")
	deployment := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName: "coredns",
				PriorityClassName:  "system-cluster-critical",
				// Its own resolver would be itself; it resolves nothing off the cluster anyway.
				DNSPolicy:    corev1.DNSDefault,
				NodeSelector: map[string]string{SimulatedLabel: "false"},
				Containers: []corev1.Container{{
					Name:  "coredns",
					Image: image,
					Args:  []string{"-conf", "/etc/coredns/Corefile"},
					Ports: []corev1.ContainerPort{
						{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
						{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
					},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
						PeriodSeconds: 2,
					},
					LivenessProbe: &corev1.Probe{
						ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}},
						InitialDelaySeconds: 10,
					},
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false),
						ReadOnlyRootFilesystem:   ptr.To(true),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}},
				}}},
			},
		},
	}}
	deployment.TypeMeta, deployment.ObjectMeta = meta("Deployment", "coredns")
	return []ctrlclient.Object{sa, role, binding, config, service, deployment}
}
