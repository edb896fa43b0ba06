package realnode

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
	"github.com/pelletier/go-toml/v2"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

func testConfig() (Config, layout) {
	dir := "/home/me/.flotilla/clusters/w1/nodes/w1-real-abc"
	return Config{
		Name: "w1-real-abc", Dir: dir,
		Binaries:      binaries.Set{Dir: "/cache/v1.36.3", Version: "v1.36.3"},
		Network:       netip.MustParsePrefix("10.200.3.0/24"),
		APIServerPort: 34567, Mirror: registryconn.Mirror{Registry: "127.0.0.1:5001", Connection: registryconn.Config{PlainHTTP: true}},
		CACert:         []byte("-----BEGIN CERTIFICATE-----\n"),
		BootstrapToken: "abcdef.0123456789abcdef",
		ProviderID:     "local://default/w1-real-abc",
		Labels:         map[string]string{SimulatedLabel: "false", "example.com/tier": "web"},
		PodCIDR:        "192.168.0.0/16", ClusterDNS: "10.96.0.10",
		Images: NodeImages{
			Sandbox: SandboxImage + "@sha256:" + strings.Repeat("1", 64),
			DNS:     DNSImage + "@sha256:" + strings.Repeat("2", 64),
		},
	}, newLayout(dir)
}

func TestContainerdConfigKeepsEverythingInTheNodesDirectories(t *testing.T) {
	g := NewWithT(t)
	cfg, l := testConfig()
	var parsed map[string]any
	g.Expect(toml.Unmarshal([]byte(containerdConfig(cfg, l, "/usr/sbin/runc")), &parsed)).To(Succeed(), "the configuration is TOML")

	get := func(path ...string) any {
		var v any = parsed
		for _, key := range path {
			m, ok := v.(map[string]any)
			g.Expect(ok).To(BeTrue(), "%v", path)
			v = m[key]
		}
		return v
	}
	g.Expect(get("version")).To(BeEquivalentTo(3))
	g.Expect(get("root")).To(Equal(l.containerdRoot()))
	g.Expect(get("state")).To(HavePrefix(RuntimeRoot + "/"))
	g.Expect(get("grpc", "address")).To(Equal(l.containerdSocket()))
	g.Expect(len(l.containerdSocket()+".ttrpc")).To(BeNumerically("<", 108), "a Unix socket path fits")
	g.Expect(get("imports")).To(BeEmpty(), "no host configuration is read")
	g.Expect(get("plugins", "io.containerd.nri.v1.nri", "disable")).To(BeTrue(), "NRI's socket is host-wide")
	g.Expect(get("plugins", "io.containerd.internal.v1.opt", "path")).To(HavePrefix(l.dir))
	g.Expect(get("plugins", "io.containerd.cri.v1.images", "registry", "config_path")).To(Equal(l.certsDir()))
	g.Expect(get("plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox")).To(Equal("registry.k8s.io/pause:3.10@sha256:"+strings.Repeat("1", 64)),
		"the sandbox image is pulled by digest")
	g.Expect(get("plugins", "io.containerd.transfer.v1.local", "config_path")).To(Equal(l.certsDir()))
	runtime := "io.containerd.cri.v1.runtime"
	g.Expect(get("plugins", runtime, "netns_mounts_under_state_dir")).To(BeTrue())
	g.Expect(get("plugins", runtime, "restrict_oom_score_adj")).To(BeTrue())
	g.Expect(get("plugins", runtime, "containerd", "runtimes", "runc", "options", "BinaryName")).To(Equal("/usr/sbin/runc"))
	g.Expect(get("plugins", runtime, "containerd", "runtimes", "runc", "options", "Root")).To(HavePrefix(l.runtimeDir()))
	g.Expect(get("plugins", runtime, "cni", "bin_dirs")).To(Equal([]any{"/cache/v1.36.3/cni"}))
	g.Expect(get("plugins", runtime, "cni", "conf_template")).To(Equal(l.cniTemplate()))
	g.Expect(get("plugins", "io.containerd.grpc.v1.cri", "stream_server_address")).To(Equal("127.0.0.1"))
}

func TestHostsTOMLMakesTheMirrorTheOnlyServer(t *testing.T) {
	g := NewWithT(t)
	cfg, l := testConfig()
	parse := func(mirror registryconn.Mirror) map[string]any {
		var parsed map[string]any
		g.Expect(toml.Unmarshal([]byte(hostsTOML(mirror, "registry.k8s.io", l.mirrorCA())), &parsed)).To(Succeed())
		return parsed
	}
	// The loopback address the manager uses: the node network forwards it (nodenet.Node.LoopbackForwards).
	g.Expect(parse(cfg.Mirror)).To(Equal(map[string]any{
		"server":        "http://127.0.0.1:5001/v2/registry.k8s.io",
		"override_path": true,
		"capabilities":  []any{"pull", "resolve"},
	}))
	g.Expect(MirroredRegistries).To(ConsistOf("docker.io", "registry.k8s.io", "ghcr.io"))

	// A mirror of the management cluster: TLS with its CA, its credentials, copies under a prefix.
	secure := registryconn.Mirror{Registry: "localhost:5443/copies/air-gap", Connection: registryconn.Config{
		Username: "puller", Password: "s3cret:with colon", CAData: []byte("-----BEGIN CERTIFICATE-----\n"),
	}}
	g.Expect(parse(secure)).To(Equal(map[string]any{
		"server":        "https://localhost:5443/v2/copies/air-gap/registry.k8s.io",
		"override_path": true,
		"capabilities":  []any{"pull", "resolve"},
		"ca":            l.mirrorCA(),
		"header":        map[string]any{"Authorization": "Basic cHVsbGVyOnMzY3JldDp3aXRoIGNvbG9u"},
	}))
	secure.Connection = registryconn.Config{InsecureSkipTLSVerify: true}
	g.Expect(parse(secure)).To(HaveKeyWithValue("skip_verify", true))
	g.Expect(parse(secure)).NotTo(HaveKey("header"))
}

func TestTheImageMirrorMustBeOnLoopback(t *testing.T) {
	g := NewWithT(t)
	cfg, _ := testConfig()
	for _, registry := range []string{"127.0.0.1:5001", "localhost:5443/copies"} {
		cfg.Mirror.Registry = registry
		_, err := cfg.mirrorPort()
		g.Expect(err).NotTo(HaveOccurred(), registry)
	}
	for _, registry := range []string{"mirror.example.com:5000", "127.0.0.1", "10.0.0.1:5001", "127.0.0.2:5001", "http://127.0.0.1:5001"} {
		cfg.Mirror.Registry = registry
		_, err := cfg.mirrorPort()
		g.Expect(err).To(MatchError(ContainSubstring("image mirror")), registry)
	}
}

func TestCNITemplateRendersTheNodesPodRangeWithoutMasquerade(t *testing.T) {
	g := NewWithT(t)
	_, l := testConfig()
	// What containerd fills in once kubelet reports the Node's Pod range.
	tmpl, err := template.New("cni").Parse(cniTemplate(l))
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	g.Expect(tmpl.Execute(&out, struct {
		PodCIDR       string
		PodCIDRRanges []string
		Routes        []string
	}{PodCIDR: "192.168.4.0/24", PodCIDRRanges: []string{"192.168.4.0/24"}, Routes: []string{"0.0.0.0/0"}})).To(Succeed())
	var conf struct {
		Plugins []struct {
			Type   string `json:"type"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				DataDir string                `json:"dataDir"`
				Ranges  [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	g.Expect(json.Unmarshal(out.Bytes(), &conf)).To(Succeed(), out.String())
	g.Expect(conf.Plugins).To(HaveLen(1))
	g.Expect(conf.Plugins[0].Type).To(Equal("bridge"))
	g.Expect(conf.Plugins[0].IPMasq).To(BeFalse(), "nothing is masqueraded to the outside")
	g.Expect(conf.Plugins[0].IPAM.DataDir).To(Equal(l.cniIPAMDir()))
	g.Expect(conf.Plugins[0].IPAM.Ranges).To(Equal([][]map[string]string{{{"subnet": "192.168.4.0/24"}}}))
}

func TestKubeletConfig(t *testing.T) {
	g := NewWithT(t)
	cfg, l := testConfig()
	data, err := kubeletConfig(cfg, l)
	g.Expect(err).NotTo(HaveOccurred())
	var kc kubeletconfigv1beta1.KubeletConfiguration
	g.Expect(yaml.UnmarshalStrict(data, &kc)).To(Succeed())
	g.Expect(*kc.FailCgroupV1).To(BeFalse(), "Kubernetes 1.36 refuses cgroup v1 unless told")
	g.Expect(kc.CgroupRoot).To(Equal("/flotilla/" + l.id + "/pods"))
	g.Expect(kc.CgroupDriver).To(Equal("cgroupfs"))
	g.Expect(kc.ContainerRuntimeEndpoint).To(Equal("unix://" + l.containerdSocket()))
	g.Expect(kc.ClusterDNS).To(Equal([]string{"10.96.0.10"}))
	g.Expect(*kc.ResolverConfig).To(Equal(l.resolvConf()), "no name servers off the cluster")
	g.Expect(kc.ReadOnlyPort).To(BeZero())
	g.Expect(*kc.Authentication.Anonymous.Enabled).To(BeFalse())
	g.Expect(kc.Authorization.Mode).To(Equal(kubeletconfigv1beta1.KubeletAuthorizationModeWebhook))
	g.Expect(kc.HealthzBindAddress).To(Equal("127.0.0.1"))
	g.Expect(kc.RotateCertificates).To(BeFalse(), "kubelet bootstraps before it starts, and registers at once")
	g.Expect(kc.PodLogsDir).To(HavePrefix(l.dir))
	g.Expect(kc.VolumePluginDir).To(HavePrefix(l.dir))
	g.Expect(kc.ProviderID).To(Equal("local://default/w1-real-abc"))
	g.Expect(len(l.kubeletRootMount()+"/pod-resources/kubelet.sock")).To(BeNumerically("<", 108),
		"kubelet's sockets in its root directory fit a Unix socket path, however long the node's directory")

	args := kubeletArgs(cfg, l, netip.MustParseAddr("10.200.3.2"))
	g.Expect(args).To(ContainElements("--node-ip=10.200.3.2", "--hostname-override=w1-real-abc",
		"--root-dir="+l.kubeletRootMount(), "--node-labels=example.com/tier=web,flotilla.dev/simulated=false"))
}

func TestKubeProxyConfigLeavesTheHostsConntrackAlone(t *testing.T) {
	g := NewWithT(t)
	cfg, l := testConfig()
	data, err := kubeProxyConfig(cfg, l)
	g.Expect(err).NotTo(HaveOccurred())
	var kc kubeproxyconfigv1alpha1.KubeProxyConfiguration
	g.Expect(yaml.UnmarshalStrict(data, &kc)).To(Succeed())
	g.Expect(kc.Mode).To(BeEquivalentTo("iptables"))
	g.Expect(kc.ClusterCIDR).To(Equal("192.168.0.0/16"))
	g.Expect(kc.ClientConnection.Kubeconfig).To(Equal(l.kubeletKubeconfig()), "it runs with kubelet's credentials")
	g.Expect(*kc.Conntrack.MaxPerCore).To(BeZero())
	g.Expect(kc.Conntrack.TCPEstablishedTimeout.Duration).To(BeZero())
	g.Expect(kc.MetricsBindAddress).To(HavePrefix("127.0.0.1:"))
	g.Expect(kc.HealthzBindAddress).To(HavePrefix("127.0.0.1:"))
}

func TestBootstrapKubeconfigDialsTheGatewayWithTheToken(t *testing.T) {
	g := NewWithT(t)
	cfg, _ := testConfig()
	data, err := bootstrapKubeconfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("server: https://10.200.3.1:34567"))
	g.Expect(string(data)).To(ContainSubstring("token: abcdef.0123456789abcdef"))
}

func TestKernelSettingsAreCoveredByFilesOfTheNode(t *testing.T) {
	g := NewWithT(t)
	_, l := testConfig()
	for name := range kernelSettings {
		g.Expect(l.sysctlFile(name)).To(HavePrefix(l.sysctlDir() + string(filepath.Separator)))
		g.Expect(strings.Contains(filepath.Base(l.sysctlFile(name)), "/")).To(BeFalse())
	}
	g.Expect(kernelSettings).To(HaveKeyWithValue("kernel/panic_on_oops", "1"), "kubelet's wish, kept from the host")
}

func TestANodeConfigWithImagesByTagIsRefused(t *testing.T) {
	g := NewWithT(t)
	cfg, _ := testConfig()
	g.Expect(cfg.Images.validate()).To(Succeed())
	cfg.Images.DNS = DNSImage
	g.Expect(cfg.Images.validate()).To(MatchError(ContainSubstring(`Images.DNS "registry.k8s.io/coredns/coredns:v1.14.7" is not pinned by a digest`)))
}
