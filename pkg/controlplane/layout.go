package controlplane

import (
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// layout names the files of a control plane directory:
//
//	state.json                 ports and version, chosen once
//	pki/                       CA, etcd's own CA, serving, peer and client certificates, service
//	                           account keys, kubeconfigs of the admin and of each component (all 0600)
//	etcd/                      etcd's data
//	kwok/kwok.yaml             the Stages kwok plays
//	nodes/<machine>/           the cluster's real nodes (package realnode)
//	logs/<process>.log         stdout and stderr of each process
//	run/<process>.pid          pid files, and <process>.json records (package process)
//	run/.lock                  serialises Ensure, Stop, Delete and the supervisor on the directory
type layout string

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{string(l)}, elem...)...)
}

func (l layout) state() string          { return l.path("state.json") }
func (l layout) pki(name string) string { return l.path("pki", name) }
func (l layout) etcdData() string       { return l.path("etcd") }
func (l layout) kwokDir() string        { return l.path("kwok") }
func (l layout) kwokConfig() string     { return l.path("kwok", "kwok.yaml") }
func (l layout) nodesDir() string       { return l.path("nodes") }

// kubeconfig is the kubeconfig file of a user: "admin", "kube-controller-manager", ...
func (l layout) kubeconfig(user string) string { return l.pki(user + ".kubeconfig") }

func (l layout) keeper() process.Keeper {
	return process.InDir(string(l))
}

// PKI file names under pki/.
const (
	caCert            = "ca.crt"
	caKey             = "ca.key"
	apiserverCert     = "apiserver.crt"
	apiserverKey      = "apiserver.key"
	etcdCACert        = "etcd-ca.crt"
	etcdCAKey         = "etcd-ca.key"
	etcdServerCert    = "etcd-server.crt"
	etcdServerKey     = "etcd-server.key"
	etcdPeerCert      = "etcd-peer.crt"
	etcdPeerKey       = "etcd-peer.key"
	etcdClientCert    = "apiserver-etcd-client.crt"
	etcdClientKey     = "apiserver-etcd-client.key"
	adminCert         = "admin.crt"
	adminKey          = "admin.key"
	controllerMgrCert = "kube-controller-manager.crt"
	controllerMgrKey  = "kube-controller-manager.key"
	schedulerCert     = "kube-scheduler.crt"
	schedulerKey      = "kube-scheduler.key"
	kubeletClientCert = "apiserver-kubelet-client.crt"
	kubeletClientKey  = "apiserver-kubelet-client.key"
	saKey             = "sa.key"
	saPub             = "sa.pub"
)

// Users of the client certificates and kubeconfigs.
const (
	adminUser         = "admin"
	adminCommonName   = "flotilla-admin"
	mastersGroup      = "system:masters"
	controllerMgrUser = "system:kube-controller-manager"
	schedulerUser     = "system:kube-scheduler"
)

// KubeletClientUser is the user kube-apiserver is to the kubelets of real nodes (logs, exec,
// port-forward); the cluster binds it to the ClusterRole system:kubelet-api-admin.
const KubeletClientUser = "kube-apiserver-kubelet-client"
