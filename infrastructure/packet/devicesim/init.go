package devicesim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// Where kubeadm's cloud-init writes the cluster CA.
const (
	caCertPath = "/etc/kubernetes/pki/ca.crt"
	caKeyPath  = "/etc/kubernetes/pki/ca.key"
)

// kubeadmInit plays kubeadm init: a control plane on the endpoint with the cloud-init's CA, and
// what kubeadm init leaves in the cluster.
func (r *Runtime) kubeadmInit(ctx context.Context, d metal.Device, current func() (metal.Device, bool), ud *userData, cfg *kubeadmConfig) error {
	log := logr.FromContextOrDiscard(ctx)
	if cfg.cluster == nil || cfg.initRegistration == nil {
		return errors.New("kubeadm init: the config has no ClusterConfiguration or InitConfiguration")
	}
	host, port, err := splitEndpoint(cfg.cluster.ControlPlaneEndpoint)
	if err != nil {
		return fmt.Errorf("kubeadm init: ClusterConfiguration.controlPlaneEndpoint: %w", err)
	}
	ca, err := pki.ParseKeyPair(ud.files[caCertPath], ud.files[caKeyPath])
	if err != nil {
		return fmt.Errorf("kubeadm init: the cluster CA in %s and %s: %w", caCertPath, caKeyPath, err)
	}
	set, err := binaries.Find(r.opts.BinRoot, cfg.cluster.KubernetesVersion)
	if err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}
	node, err := desiredNode(d, cfg.initRegistration, cfg.cluster.KubernetesVersion, true)
	if err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}

	log.Info("Waiting for the control plane endpoint's address to be assigned to the device", "endpoint", cfg.cluster.ControlPlaneEndpoint)
	for !holdsAddress(current, host) {
		if err := wait(ctx); err != nil {
			return err
		}
	}

	cp := controlplane.Config{
		Name: node.Name, Dir: r.deviceDir(d.ID), Binaries: set,
		Host: host, APIServerPort: port, CA: ca, Kwok: true,
		ServiceClusterIPRange: cfg.cluster.Networking.ServiceSubnet,
		UnsafeNoFsync:         true, // a simulated device: its etcd need not survive a crash of this machine
	}
	log.Info("kubeadm init: starting etcd and kube-apiserver", "endpoint", cfg.cluster.ControlPlaneEndpoint, "version", cfg.cluster.KubernetesVersion)
	if _, err := controlplane.Ensure(ctx, cp); err != nil {
		return fmt.Errorf("kubeadm init: starting the control plane: %w", err)
	}
	if err := controlplane.WaitReady(ctx, cp); err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}
	kubeconfig, err := controlplane.AdminKubeconfig(cp)
	if err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeadm init: the admin kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}
	clusterInfo, err := clusterInfoKubeconfig(cfg.cluster.ControlPlaneEndpoint, ud.files[caCertPath])
	if err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}
	objects := []any{
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"},
			Data:       map[string]string{"ClusterConfiguration": cfg.clusterDocument},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: "cluster-info"},
			Data:       map[string]string{"kubeconfig": string(clusterInfo)},
		},
		node,
	}
	if err := createAll(ctx, cs, objects); err != nil {
		return fmt.Errorf("kubeadm init: %w", err)
	}

	r.mu.Lock()
	r.controlPlanes[hostPort(host, port)] = &controlPlane{deviceID: d.ID, ca: ca.Cert, client: cs}
	r.mu.Unlock()
	log.Info("kubeadm init done: the control plane serves the endpoint", "endpoint", hostPort(host, port), "node", node.Name)
	return nil
}

// holdsAddress reports whether the device, as the API shows it now, has address.
func holdsAddress(current func() (metal.Device, bool), address string) bool {
	d, found := current()
	return found && slices.ContainsFunc(d.IPAddresses, func(a metal.IPAddress) bool { return a.Address == address })
}

// clusterInfoKubeconfig is kube-public/cluster-info's kubeconfig: the endpoint and its CA, no
// credentials.
func clusterInfoKubeconfig(endpoint string, caPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: "https://" + endpoint, CertificateAuthorityData: caPEM}
	return clientcmd.Write(*cfg)
}

// createAll creates ConfigMaps and Nodes, retrying while the device runs: a namespace may appear
// only shortly after kube-apiserver is ready, and a network error passes. One that exists
// already is left as it is.
func createAll(ctx context.Context, cs kubernetes.Interface, objects []any) error {
	log := logr.FromContextOrDiscard(ctx)
	for _, obj := range objects {
		for {
			err := create(ctx, cs, obj)
			if err == nil {
				break
			}
			log.Info("Retrying", "error", err.Error())
			if err := wait(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func create(ctx context.Context, cs kubernetes.Interface, obj any) error {
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Node:
		_, err = cs.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
	default:
		return fmt.Errorf("cannot create a %T", obj)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T: %w", obj, err)
	}
	return nil
}
