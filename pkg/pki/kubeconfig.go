package pki

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig returns a kubeconfig with one cluster, one user and one context, all named after
// clusterName except the user, named userName. It embeds the CA certificate and the client
// certificate and key, so the file stands alone.
func Kubeconfig(clusterName, server string, caPEM []byte, userName string, client *KeyPair) ([]byte, error) {
	if client == nil {
		return nil, errors.New("building kubeconfig: no client certificate")
	}
	return kubeconfig(clusterName, server, caPEM, userName, &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM})
}

// KubeconfigWithFiles is Kubeconfig with the client certificate and key referenced by path
// (relative paths are relative to the kubeconfig file) instead of embedded: a client built
// from it reads them again when they change (client-go checks every few minutes), so renewing
// the certificate needs no restart.
func KubeconfigWithFiles(clusterName, server string, caPEM []byte, userName, certFile, keyFile string) ([]byte, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("building kubeconfig: no client certificate file")
	}
	return kubeconfig(clusterName, server, caPEM, userName, &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile})
}

func kubeconfig(clusterName, server string, caPEM []byte, userName string, auth *clientcmdapi.AuthInfo) ([]byte, error) {
	contextName := userName + "@" + clusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = auth
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: userName}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return data, nil
}
