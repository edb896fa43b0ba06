package devicesim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
	"sigs.k8s.io/cluster-api/util/secret"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// The kubeadm configs as Cluster API's kubeadm bootstrap provider writes them for a Packet
// cluster (clusterspec's node registration).
const (
	clusterConfigYAML = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: metal
controlPlaneEndpoint: 127.40.0.8:6443
kubernetesVersion: v1.36.3
networking:
  serviceSubnet: 10.96.0.0/12
`
	initConfigYAML = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  kubeletExtraArgs:
  - name: cloud-provider
    value: external
  - name: provider-id
    value: equinixmetal://{{ v1.instance_id }}
  name: '{{ v1.local_hostname }}'
`
	joinConfigYAML = `apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: 127.40.0.8:6443
    caCertHashes:
    - sha256:abc
    token: abcdef.0123456789abcdef
nodeRegistration:
  kubeletExtraArgs:
  - name: provider-id
    value: equinixmetal://{{ v1.instance_id }}
  - name: node-labels
    value: pool=a,tier=web
  name: '{{ v1.local_hostname }}'
`
)

func device(userdata string) metal.Device {
	return metal.Device{
		ID: "d-123", Hostname: "metal-cp-x", Userdata: userdata,
		IPAddresses: []metal.IPAddress{
			{Address: "147.75.0.3", AddressFamily: 4, Public: true, Management: true},
			{Address: "10.64.0.3", AddressFamily: 4, Management: true},
			{Address: "127.40.0.8", AddressFamily: 4, Public: true}, // the elastic IP
		},
	}
}

func TestTheKubeadmProvidersInitCloudInitGivesTheDeviceItsCAEndpointAndNode(t *testing.T) {
	g := NewWithT(t)
	certificates := secret.NewCertificatesForInitialControlPlane(&bootstrapv1.ClusterConfiguration{})
	g.Expect(certificates.Generate()).To(Succeed())
	userdata, err := cloudinit.NewInitControlPlane(&cloudinit.ControlPlaneInput{
		BaseUserData:         cloudinit.BaseUserData{PreKubeadmCommands: []string{"swapoff -a", "apt-get install -y kubeadm"}},
		Certificates:         certificates,
		ClusterConfiguration: clusterConfigYAML,
		InitConfiguration:    initConfigYAML,
	})
	g.Expect(err).NotTo(HaveOccurred())

	d := device(string(userdata))
	rendered, err := render(d.Userdata, instanceData{"local_hostname": d.Hostname, "instance_id": d.ID})
	g.Expect(err).NotTo(HaveOccurred())
	ud, err := parseUserData(rendered)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ud.kubeadm).To(Equal("init"))
	g.Expect(ud.configPath).To(Equal("/run/kubeadm/kubeadm.yaml"))

	ca := certificates.GetByPurpose(secret.ClusterCA)
	g.Expect(ud.files[caCertPath]).To(Equal(ca.KeyPair.Cert))
	keyPair, err := pki.ParseKeyPair(ud.files[caCertPath], ud.files[caKeyPath])
	g.Expect(err).NotTo(HaveOccurred(), "the CA of the cloud-init is a usable key pair")
	hashes, err := ca.Hashes()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hashes).To(ConsistOf(caCertHash(keyPair.Cert)), "the pin is the one the kubeadm provider puts in join configs")

	cfg, err := parseKubeadmConfig(ud.files[ud.configPath])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.cluster.ControlPlaneEndpoint).To(Equal("127.40.0.8:6443"))
	g.Expect(cfg.cluster.KubernetesVersion).To(Equal("v1.36.3"))
	g.Expect(cfg.clusterDocument).To(Equal(clusterConfigYAML), "kubeadm-config gets the ClusterConfiguration as written")
	g.Expect(cfg.join).To(BeNil())

	node, err := desiredNode(d, cfg.initRegistration, cfg.cluster.KubernetesVersion, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(node.Name).To(Equal("metal-cp-x"))
	g.Expect(node.Spec.ProviderID).To(Equal("equinixmetal://d-123"))
	g.Expect(node.Spec.Taints).To(ConsistOf(corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}))
	g.Expect(node.Labels).To(HaveKey("node-role.kubernetes.io/control-plane"))
	g.Expect(node.Labels).To(HaveKeyWithValue(infrav1.SimulatedNodeLabel, "true"))
	g.Expect(node.Annotations).To(HaveKeyWithValue(infrav1.KwokNodeAnnotation, "fake"))
	g.Expect(node.Status.Addresses).To(ConsistOf(
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "metal-cp-x"},
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "147.75.0.3"},
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.64.0.3"},
	))
	g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal("v1.36.3"))
}

func TestTheKubeadmProvidersJoinCloudInitGivesTheDeviceItsDiscoveryAndWorkerNode(t *testing.T) {
	g := NewWithT(t)
	userdata, err := cloudinit.NewNode(&cloudinit.NodeInput{JoinConfiguration: joinConfigYAML})
	g.Expect(err).NotTo(HaveOccurred())
	d := device(string(userdata))
	rendered, err := render(d.Userdata, instanceData{"local_hostname": d.Hostname, "instance_id": d.ID})
	g.Expect(err).NotTo(HaveOccurred())
	ud, err := parseUserData(rendered)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ud.kubeadm).To(Equal("join"))

	cfg, err := parseKubeadmConfig(ud.files[ud.configPath])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.join.Discovery.BootstrapToken.APIServerEndpoint).To(Equal("127.40.0.8:6443"))
	g.Expect(cfg.join.Discovery.BootstrapToken.Token).To(Equal("abcdef.0123456789abcdef"))
	g.Expect(cfg.join.Discovery.BootstrapToken.CACertHashes).To(ConsistOf("sha256:abc"))
	g.Expect(cfg.join.ControlPlane).To(BeNil())

	node, err := desiredNode(d, &cfg.join.NodeRegistration, "v1.36.3", false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(node.Spec.ProviderID).To(Equal("equinixmetal://d-123"))
	g.Expect(node.Spec.Taints).To(BeEmpty())
	g.Expect(node.Labels).To(HaveKeyWithValue("pool", "a"))
	g.Expect(node.Labels).To(HaveKeyWithValue("tier", "web"))
	g.Expect(node.Labels).NotTo(HaveKey("node-role.kubernetes.io/control-plane"))
}

func TestUserdataADeviceCannotRunIsRefusedWithTheReason(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write([]byte(joinConfigYAML))
	_ = zw.Close()
	encoded := base64.StdEncoding.EncodeToString(zipped.Bytes())

	tests := []struct {
		name     string
		userdata string
		wantErr  string
	}{
		{name: "a shell script is not a cloud-config", userdata: "#!/bin/sh\nkubeadm init\n", wantErr: "not a #cloud-config document"},
		{name: "without kubeadm there is nothing to boot", userdata: "#cloud-config\nruncmd:\n- echo hi\n", wantErr: "neither kubeadm init nor kubeadm join"},
		{name: "kubeadm without --config", userdata: "#cloud-config\nruncmd:\n- kubeadm init && echo done\n", wantErr: "without --config"},
		{name: "a --config file the cloud-init does not write", userdata: "#cloud-config\nruncmd:\n- kubeadm join --config /run/x.yaml\n", wantErr: "/run/x.yaml is not among write_files"},
		{name: "an unknown instance data variable", userdata: "## template: jinja\n#cloud-config\nhostname: {{ v1.region }}\n", wantErr: "unknown instance data v1.region"},
		{
			name:     "a gzip+base64 file and a command given as a list are read",
			userdata: "#cloud-config\nwrite_files:\n- path: /run/j.yaml\n  encoding: gz+b64\n  content: " + encoded + "\nruncmd:\n- [kubeadm, join, --config, /run/j.yaml]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rendered, err := render(tt.userdata, instanceData{"local_hostname": "h", "instance_id": "i"})
			if err == nil {
				var ud *userData
				ud, err = parseUserData(rendered)
				if err == nil {
					g.Expect(string(ud.files[ud.configPath])).To(Equal(joinConfigYAML))
				}
			}
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestABootstrapTokenMustExistMatchAndBeValid(t *testing.T) {
	tokenSecret := func(secret, expiration string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
			Data: map[string][]byte{
				"token-id": []byte("abcdef"), "token-secret": []byte(secret), "expiration": []byte(expiration),
				"usage-bootstrap-authentication": []byte("true"),
			},
		}
	}
	future, past := time.Now().Add(time.Hour).Format(time.RFC3339), time.Now().Add(-time.Hour).Format(time.RFC3339)
	tests := []struct {
		name    string
		secret  *corev1.Secret
		token   string
		wantErr string
	}{
		{name: "the token the provider wrote is accepted", secret: tokenSecret("0123456789abcdef", future), token: "abcdef.0123456789abcdef"},
		{name: "another secret is refused", secret: tokenSecret("0123456789abcdef", future), token: "abcdef.ffffffffffffffff", wantErr: "does not match"},
		{name: "an expired token is refused", secret: tokenSecret("0123456789abcdef", past), token: "abcdef.0123456789abcdef", wantErr: "expired"},
		{name: "a token the cluster does not hold is refused", token: "abcdef.0123456789abcdef", wantErr: "not found"},
		{name: "a malformed token is refused", token: "abcdef", wantErr: "<id>.<secret>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := fake.NewClientset()
			if tt.secret != nil {
				_, err := cs.CoreV1().Secrets("kube-system").Create(context.Background(), tt.secret, metav1.CreateOptions{})
				g.Expect(err).NotTo(HaveOccurred())
			}
			err := checkToken(context.Background(), &controlPlane{client: cs}, tt.token)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
