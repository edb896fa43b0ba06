package realnode

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// The files below are rendered by pure functions of the node's Config and layout; Ensure writes
// those that changed and restarts the processes that read them.

// MirroredRegistries are the registries whose images a node pulls from the image mirror, and only
// from there (package ociimage's layout: <mirror>/<registry>/<repository>).
var MirroredRegistries = []string{"docker.io", "registry.k8s.io", "ghcr.io"}

// SandboxImage is the image of every Pod sandbox, which nodes pull pinned by digest
// (NodeImages).
var SandboxImage = ociimage.Pause.Name

// DNSImage is the image of the cluster DNS that clusters with real nodes run (CoreDNS), which
// nodes pull pinned by digest (NodeImages).
var DNSImage = ociimage.CoreDNS.Name

// NodeImages are the references of SandboxImage and DNSImage pinned by digest
// (<name>:<tag>@sha256:...), the way every real node pulls them: an image replaced under the
// same tag in the mirror is not pulled.
type NodeImages struct {
	Sandbox, DNS string
}

// PinnedImages pins SandboxImage and DNSImage by the digests of record, which `flotilla image
// build` writes (ociimage.Record).
func PinnedImages(record ociimage.Record) (NodeImages, error) {
	sandbox, err := record.Pin(SandboxImage)
	if err != nil {
		return NodeImages{}, err
	}
	dns, err := record.Pin(DNSImage)
	if err != nil {
		return NodeImages{}, err
	}
	return NodeImages{Sandbox: sandbox, DNS: dns}, nil
}

// validate checks that both images are pinned by a digest.
func (i NodeImages) validate() error {
	for _, ref := range []struct{ field, value string }{{"Sandbox", i.Sandbox}, {"DNS", i.DNS}} {
		if _, err := name.NewDigest(ref.value, name.StrictValidation); err != nil {
			return fmt.Errorf("node config: Images.%s %q is not pinned by a digest (<name>@sha256:...; PinnedImages): %w", ref.field, ref.value, err)
		}
	}
	return nil
}

// Images are the images every cluster with real nodes pulls, whatever it installs: the Pod
// sandbox and the cluster DNS. An air-gapped mirror needs them (package archive exports them).
var Images = []string{SandboxImage, DNSImage}

// gateway is the node network's gateway.
func (cfg Config) gateway() netip.Addr { return cfg.Network.Masked().Addr().Next() }

// apiServer is kube-apiserver's URL as nodes reach it.
func (cfg Config) apiServer() string {
	return "https://" + net.JoinHostPort(cfg.gateway().String(), strconv.Itoa(int(cfg.APIServerPort)))
}

// quoteTOML writes s as a TOML basic string.
func quoteTOML(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a TOML basic string
	return string(b)
}

// containerdConfig is containerd's configuration: every path under the node's directories, its
// sockets in the runtime directory, CRI with runc (Debian's) and the CNI plugins of the binary
// cache, images through the hosts.toml files of certs.d, Pod network namespaces kept under its
// state directory, and NRI (whose socket is host-wide) off.
func containerdConfig(cfg Config, l layout, runc string) string {
	q := quoteTOML
	return `# Written by Flotilla (package realnode); changes are overwritten.
version = 3
root = ` + q(l.containerdRoot()) + `
state = ` + q(l.containerdState()) + `
temp = ` + q(l.tmp()) + `
imports = []

[grpc]
  address = ` + q(l.containerdSocket()) + `

[ttrpc]
  address = ` + q(l.containerdSocket()+".ttrpc") + `

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = ` + q(l.path("containerd", "opt")) + `

  [plugins.'io.containerd.nri.v1.nri']
    disable = true

  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = ` + q(l.shimSockets()) + `

  [plugins.'io.containerd.transfer.v1.local']
    config_path = ` + q(l.certsDir()) + `

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = ` + q(cfg.Images.Sandbox) + `

    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ` + q(l.certsDir()) + `

  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    disable_apparmor = true
    netns_mounts_under_state_dir = true
    restrict_oom_score_adj = true
    cdi_spec_dirs = []

    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ` + q(runc) + `
        Root = ` + q(l.runcRoot()) + `
        SystemdCgroup = false

    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [` + q(cfg.Binaries.Path(binaries.CNIDir)) + `]
      conf_dir = ` + q(l.cniConfDir()) + `
      conf_template = ` + q(l.cniTemplate()) + `

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
`
}

// hostsTOML is the hosts.toml of registry: the image mirror is its only server, so that nothing
// is pulled from elsewhere. The mirror holds registry's images under [<prefix>/]<registry>/
// (package ociimage's layout), over TLS with its CA (caFile, when the mirror has one) or plain
// HTTP, and with its credentials as a basic Authorization header.
func hostsTOML(mirror registryconn.Mirror, registry, caFile string) string {
	host, prefix, _ := registryconn.SplitRegistry(mirror.Registry)
	scheme, path := "https", "/v2/"+registry
	if mirror.Connection.PlainHTTP {
		scheme = "http"
	}
	if prefix != "" {
		path = "/v2/" + prefix + "/" + registry
	}
	toml := `# Written by Flotilla (package realnode): ` + registry + ` images come from the image mirror only.
server = ` + quoteTOML(scheme+"://"+host+path) + `
override_path = true
capabilities = ['pull', 'resolve']
`
	if len(mirror.Connection.CAData) > 0 {
		toml += "ca = " + quoteTOML(caFile) + "\n"
	}
	if mirror.Connection.InsecureSkipTLSVerify {
		toml += "skip_verify = true\n"
	}
	if mirror.Connection.Username != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(mirror.Connection.Username + ":" + mirror.Connection.Password))
		toml += "\n[header]\n  Authorization = " + quoteTOML("Basic "+basic) + "\n"
	}
	return toml
}

// cniTemplate is containerd's CNI configuration template: containerd writes the configuration
// from it once kubelet reports the Node's Pod range. A bridge cni0 with the range's first address
// as the Pods' gateway, no masquerade (Pods keep their addresses; nothing leaves the node
// network), hairpin mode for Pods that reach themselves through a Service, and host-local
// addresses kept under the node's directory.
func cniTemplate(l layout) string {
	dataDir, _ := json.Marshal(l.cniIPAMDir())
	return `{
  "cniVersion": "1.0.0",
  "name": "flotilla",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": ` + string(dataDir) + `,
        "ranges": [{{range $i, $range := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$range}}"}]{{end}}],
        "routes": [{{range $i, $route := .Routes}}{{if $i}}, {{end}}{"dst": "{{$route}}"}{{end}}]
      }
    }
  ]
}
`
}

// kubeletConfig is kubelet's configuration (see the package documentation for why each setting).
func kubeletConfig(cfg Config, l layout) ([]byte, error) {
	kc := kubeletconfigv1beta1.KubeletConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: kubeletconfigv1beta1.SchemeGroupVersion.String(), Kind: "KubeletConfiguration"},
		Address:            "0.0.0.0",
		Port:               10250,
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To[int32](10248),
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
			Webhook:   kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			X509:      kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: l.caCert()},
		},
		Authorization:            kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook},
		ContainerRuntimeEndpoint: "unix://" + l.containerdSocket(),
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               l.cgroup() + "/pods",
		CgroupsPerQOS:            ptr.To(true),
		EnforceNodeAllocatable:   []string{"pods"},
		FailCgroupV1:             ptr.To(false),
		FailSwapOn:               ptr.To(false),
		ClusterDomain:            ClusterDomain,
		ClusterDNS:               []string{cfg.ClusterDNS},
		ResolverConfig:           ptr.To(l.resolvConf()),
		PodLogsDir:               l.podLogs(),
		VolumePluginDir:          l.kubeletVolumePlugins(),
		RotateCertificates:       false,
		ServerTLSBootstrap:       false,
		ProviderID:               cfg.ProviderID,
		ProtectKernelDefaults:    false,
		// Containers that ask for no seccomp profile get the runtime's default one.
		SeccompDefault: ptr.To(true),
		// kubelet runs as root of the node's user namespace: what only the host's root may do
		// (kernel settings, OOM score adjustments, /dev/kmsg) fails, and is let go.
		FeatureGates: map[string]bool{"KubeletInUserNamespace": true},
		OOMScoreAdj:  ptr.To[int32](0),
		// The host's disk is shared: only a nearly full one evicts.
		EvictionHard: map[string]string{"memory.available": "100Mi", "nodefs.available": "5%", "imagefs.available": "5%"},
		// Ready as soon as possible after a start: the status is pushed every 5 s.
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 5 * time.Second},
	}
	return yaml.Marshal(kc)
}

// kubeProxyConfig is kube-proxy's configuration: iptables mode in the node's network namespace,
// with the kubelet's credentials, its servers on the namespace's loopback, and the host-wide
// conntrack settings left alone.
func kubeProxyConfig(cfg Config, l layout) ([]byte, error) {
	zero := metav1.Duration{}
	kc := kubeproxyconfigv1alpha1.KubeProxyConfiguration{
		TypeMeta:           metav1.TypeMeta{APIVersion: kubeproxyconfigv1alpha1.SchemeGroupVersion.String(), Kind: "KubeProxyConfiguration"},
		ClientConnection:   componentbaseconfigv1alpha1.ClientConnectionConfiguration{Kubeconfig: l.kubeletKubeconfig()},
		HostnameOverride:   cfg.Name,
		BindAddress:        "0.0.0.0",
		HealthzBindAddress: "127.0.0.1:10256",
		MetricsBindAddress: "127.0.0.1:10249",
		Mode:               "iptables",
		ClusterCIDR:        cfg.PodCIDR,
		Conntrack: kubeproxyconfigv1alpha1.KubeProxyConntrackConfiguration{
			MaxPerCore:            ptr.To[int32](0),
			Min:                   ptr.To[int32](0),
			TCPEstablishedTimeout: &zero,
			TCPCloseWaitTimeout:   &zero,
		},
		OOMScoreAdj: ptr.To[int32](0),
	}
	return yaml.Marshal(kc)
}

// bootstrapKubeconfig is kubelet's bootstrap kubeconfig: the bootstrap token, the cluster CA,
// and kube-apiserver at the gateway (whose address its certificate holds: package controlplane).
func bootstrapKubeconfig(cfg Config) ([]byte, error) {
	const name = "bootstrap"
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server: cfg.apiServer(), CertificateAuthorityData: cfg.CACert,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: cfg.BootstrapToken}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name}},
		CurrentContext: name,
	}
	return clientcmd.Write(kc)
}

// kubeletArgs are kubelet's flags; the rest is in its configuration file.
func kubeletArgs(cfg Config, l layout, address netip.Addr) []string {
	args := []string{
		"--config=" + l.kubeletConfig(),
		"--bootstrap-kubeconfig=" + l.bootstrapKubeconfig(),
		"--kubeconfig=" + l.kubeletKubeconfig(),
		"--cert-dir=" + l.kubeletCertDir(),
		"--root-dir=" + l.kubeletRootMount(),
		"--hostname-override=" + cfg.Name,
		"--node-ip=" + address.String(),
	}
	if labels := nodeLabels(cfg.Labels); labels != "" {
		args = append(args, "--node-labels="+labels)
	}
	return args
}

// nodeLabels writes labels as --node-labels wants them, sorted.
func nodeLabels(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// kernelSettings are the kernel settings kubelet checks at start and writes when they differ.
// They are host-wide, so the node's mount namespace shows kubelet files that hold what it wants
// (sysctlFiles) and the host keeps its own.
var kernelSettings = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// sysctlFile is the file of l that stands for /proc/sys/<name> in the node's mount namespace.
func (l layout) sysctlFile(name string) string {
	return filepath.Join(l.sysctlDir(), strings.ReplaceAll(name, "/", "."))
}

// resolvConf is the node's resolver configuration: none, so that Pods with dnsPolicy Default
// (and the node's programs) resolve nothing off the node network. Pods with ClusterFirst get the
// cluster DNS from kubelet.
const resolvConf = "# Written by Flotilla (package realnode): real nodes resolve no names off their cluster.\n"
