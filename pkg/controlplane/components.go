package controlplane

import (
	"crypto/sha256"
	_ "embed" // kwok-stages.yaml
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// kwokStages is the Stage configuration kwok runs with (see the file's header).
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// inputsEnv names the environment variable that carries a digest of the files a process reads
// at start. The process package restarts a process whose environment changed, so a process is
// restarted when one of its certificates or kubeconfigs is rewritten.
const inputsEnv = "FLOTILLA_INPUTS_DIGEST"

// serviceAccountIssuer is the issuer of service account tokens, as kubeadm sets it.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// kwokNodeLeaseSeconds is the duration of the Leases kwok renews for its Nodes, as kubelet's.
const kwokNodeLeaseSeconds = 40

// etcdMemberName names etcd's only member. It is stored in the data, so it never changes.
const etcdMemberName = "flotilla"

// component is one process of a control plane.
type component struct {
	name string
	// spec returns the process to run; its flags are documented in the package documentation.
	spec func(cfg Config, l layout, st state) process.Spec
	// inputs are the files the process reads at start.
	inputs func(l layout) []string
	// stopGrace is how long stopping the process (to restart it, or in Stop and Delete) waits for
	// it to exit after SIGTERM before it sends SIGKILL; 0 means StopTimeout.
	stopGrace time.Duration
}

// apiserverStopGrace is kube-apiserver's stopGrace. It keeps no state (etcd does), and within
// milliseconds of SIGTERM it has removed its lease and stopped listening; then it waits for its
// clients' long-running requests (watches) to end, which they do not, so it would use the whole
// StopTimeout while the cluster's API is down (or its deletion waits).
const apiserverStopGrace = 2 * time.Second

// components lists the processes of a control plane in start order; Stop goes backwards.
var components = []component{
	{name: binaries.Etcd, spec: etcdSpec, inputs: func(l layout) []string {
		return []string{l.pki(etcdCACert), l.pki(etcdServerCert), l.pki(etcdServerKey), l.pki(etcdPeerCert), l.pki(etcdPeerKey)}
	}},
	{name: binaries.KubeAPIServer, spec: apiserverSpec, stopGrace: apiserverStopGrace, inputs: func(l layout) []string {
		inputs := []string{l.pki(caCert), l.pki(apiserverCert), l.pki(apiserverKey), l.pki(etcdCACert), l.pki(etcdClientCert), l.pki(etcdClientKey), l.pki(saKey), l.pki(saPub)}
		if _, err := os.Stat(l.pki(kubeletClientCert)); err == nil {
			inputs = append(inputs, l.pki(kubeletClientCert), l.pki(kubeletClientKey))
		}
		return inputs
	}},
	{name: binaries.KubeControllerManager, spec: controllerManagerSpec, inputs: func(l layout) []string {
		return []string{l.kubeconfig("kube-controller-manager"), l.pki(caCert), l.pki(caKey), l.pki(saKey)}
	}},
	{name: binaries.KubeScheduler, spec: schedulerSpec, inputs: func(l layout) []string {
		return []string{l.kubeconfig("kube-scheduler")}
	}},
	{name: binaries.Kwok, spec: kwokSpec, inputs: func(l layout) []string {
		return []string{l.kubeconfig(adminUser), l.kwokConfig()}
	}},
}

// enabled reports whether cfg runs the component.
func (c component) enabled(cfg Config) bool {
	switch c.name {
	case binaries.KubeControllerManager:
		return cfg.ControllerManager
	case binaries.KubeScheduler:
		return cfg.Scheduler
	case binaries.Kwok:
		return cfg.Kwok
	default:
		return true
	}
}

// processSpec returns the component's Spec with the digest of its inputs in its environment.
func (c component) processSpec(cfg Config, l layout, st state) (process.Spec, error) {
	spec := c.spec(cfg, l, st)
	digest, err := digestFiles(c.inputs(l))
	if err != nil {
		return spec, err
	}
	spec.Env = append(spec.Env, inputsEnv+"="+digest)
	return spec, nil
}

func digestFiles(paths []string) (string, error) {
	h := sha256.New()
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func etcdClientURL(st state) string { return "https://" + hostPort("127.0.0.1", st.EtcdClientPort) }
func etcdPeerURL(st state) string   { return "https://" + hostPort("127.0.0.1", st.EtcdPeerPort) }

func etcdSpec(cfg Config, l layout, st state) process.Spec {
	args := []string{
		"--name=" + etcdMemberName,
		"--data-dir=" + l.etcdData(),
		"--listen-client-urls=" + etcdClientURL(st),
		"--advertise-client-urls=" + etcdClientURL(st),
		"--listen-peer-urls=" + etcdPeerURL(st),
		"--initial-advertise-peer-urls=" + etcdPeerURL(st),
		"--initial-cluster=" + etcdMemberName + "=" + etcdPeerURL(st),
		"--initial-cluster-state=new",
		"--cert-file=" + l.pki(etcdServerCert),
		"--key-file=" + l.pki(etcdServerKey),
		"--trusted-ca-file=" + l.pki(etcdCACert),
		"--client-cert-auth=true",
		"--peer-cert-file=" + l.pki(etcdPeerCert),
		"--peer-key-file=" + l.pki(etcdPeerKey),
		"--peer-trusted-ca-file=" + l.pki(etcdCACert),
		"--peer-client-cert-auth=true",
		"--log-level=warn",
	}
	if cfg.UnsafeNoFsync {
		args = append(args, "--unsafe-no-fsync=true")
	}
	return process.Spec{Name: binaries.Etcd, Path: cfg.Binaries.Path(binaries.Etcd), Args: args, Dir: string(l),
		Ports: []string{hostPort("127.0.0.1", st.EtcdClientPort), hostPort("127.0.0.1", st.EtcdPeerPort)}}
}

func apiserverSpec(cfg Config, l layout, st state) process.Spec {
	args := []string{
		"--bind-address=" + st.Host,
		"--advertise-address=" + st.Host,
		"--secure-port=" + strconv.Itoa(int(st.APIServerPort)),
		"--tls-cert-file=" + l.pki(apiserverCert),
		"--tls-private-key-file=" + l.pki(apiserverKey),
		"--cert-dir=" + l.path("pki"),
		"--client-ca-file=" + l.pki(caCert),
		"--etcd-servers=" + etcdClientURL(st),
		"--etcd-cafile=" + l.pki(etcdCACert),
		"--etcd-certfile=" + l.pki(etcdClientCert),
		"--etcd-keyfile=" + l.pki(etcdClientKey),
		"--service-cluster-ip-range=" + cfg.ServiceClusterIPRange,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + l.pki(saPub),
		"--service-account-signing-key-file=" + l.pki(saKey),
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
	if network := st.nodeNetwork(); cfg.RealNodes != nil && network.IsValid() {
		args = replaceFlag(args, "--advertise-address", nodeGateway(network))
		args = replaceFlag(args, "--authorization-mode", "Node,RBAC")
		args = append(args,
			"--enable-admission-plugins=NodeRestriction",
			"--enable-bootstrap-token-auth=true",
			"--kubelet-preferred-address-types=InternalIP,Hostname",
			"--kubelet-client-certificate="+l.pki(kubeletClientCert),
			"--kubelet-client-key="+l.pki(kubeletClientKey),
		)
	}
	return process.Spec{Name: binaries.KubeAPIServer, Path: cfg.Binaries.Path(binaries.KubeAPIServer), Dir: string(l),
		Ports: []string{hostPort(st.Host, st.APIServerPort)}, Args: args, Cgroup: cfg.apiserverCgroup}
}

// nodeGateway is the gateway of a node network: where nodes and Pods reach kube-apiserver.
func nodeGateway(network netip.Prefix) string {
	return network.Masked().Addr().Next().String()
}

// replaceFlag sets flag to value in args, which holds it as flag=value.
func replaceFlag(args []string, flag, value string) []string {
	for i, arg := range args {
		if strings.HasPrefix(arg, flag+"=") {
			args[i] = flag + "=" + value
		}
	}
	return args
}

func controllerManagerSpec(cfg Config, l layout, st state) process.Spec {
	args := []string{
		"--kubeconfig=" + l.kubeconfig("kube-controller-manager"),
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + l.pki(saKey),
		"--root-ca-file=" + l.pki(caCert),
		"--cluster-name=" + cfg.Name,
		"--service-cluster-ip-range=" + cfg.ServiceClusterIPRange,
		"--profiling=false",
	}
	if cfg.RealNodes != nil && st.nodeNetwork().IsValid() {
		args = append(args,
			"--cluster-signing-kubelet-client-cert-file="+l.pki(caCert),
			"--cluster-signing-kubelet-client-key-file="+l.pki(caKey),
			"--controllers=*,tokencleaner",
			"--allocate-node-cidrs=true",
			"--cluster-cidr="+cfg.RealNodes.PodCIDR,
			"--node-cidr-mask-size=24",
		)
	}
	return process.Spec{Name: binaries.KubeControllerManager, Path: cfg.Binaries.Path(binaries.KubeControllerManager), Dir: string(l), Args: args}
}

func schedulerSpec(cfg Config, l layout, _ state) process.Spec {
	return process.Spec{Name: binaries.KubeScheduler, Path: cfg.Binaries.Path(binaries.KubeScheduler), Dir: string(l), Args: []string{
		"--kubeconfig=" + l.kubeconfig("kube-scheduler"),
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	}}
}

func kwokSpec(cfg Config, l layout, _ state) process.Spec {
	return process.Spec{
		Name: binaries.Kwok,
		Path: cfg.Binaries.Path(binaries.Kwok),
		Dir:  l.kwokDir(),
		Args: []string{
			"--kubeconfig=" + l.kubeconfig(adminUser),
			"--config=" + l.kwokConfig(),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + infrav1.KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
			"--node-lease-duration-seconds=" + strconv.Itoa(kwokNodeLeaseSeconds),
			"--cidr=" + KwokPodCIDR,
		},
		// kwok reads ~/.kwok/kwok.yaml too when it exists; its work directory is ours instead.
		Env: []string{"KWOK_WORKDIR=" + l.kwokDir()},
	}
}
