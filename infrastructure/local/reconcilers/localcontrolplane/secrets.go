package localcontrolplane

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// controllerRef is the owner reference that makes lcp the controller of its Secrets, so they go
// with it and clusterctl move takes them along.
func controllerRef(lcp *controlplanev1.LocalControlPlane) metav1.OwnerReference {
	return *metav1.NewControllerRef(lcp, controlplanev1.GroupVersion.WithKind("LocalControlPlane"))
}

// clusterSecret is a Secret of the cluster per the CAPI contract: named <cluster>-<purpose>,
// of type cluster.x-k8s.io/secret, labelled with the cluster name, controlled by lcp.
func clusterSecret(lcp *controlplanev1.LocalControlPlane, clusterName string, purpose secret.Purpose, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            secret.Name(clusterName, purpose),
			Namespace:       lcp.Namespace,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: clusterName},
			OwnerReferences: []metav1.OwnerReference{controllerRef(lcp)},
		},
		Type: clusterv1.ClusterSecretType,
		Data: data,
	}
}

// caSecret is the <cluster>-ca Secret holding the cluster CA as tls.crt and tls.key.
func caSecret(lcp *controlplanev1.LocalControlPlane, clusterName string, ca pki.KeyPair) *corev1.Secret {
	return clusterSecret(lcp, clusterName, secret.ClusterCA, map[string][]byte{
		secret.TLSCrtDataName: ca.CertPEM,
		secret.TLSKeyDataName: ca.KeyPEM,
	})
}

// kubeconfigSecret is the <cluster>-kubeconfig Secret holding an admin kubeconfig as value.
func kubeconfigSecret(lcp *controlplanev1.LocalControlPlane, clusterName string, kubeconfigData []byte) *corev1.Secret {
	return clusterSecret(lcp, clusterName, secret.Kubeconfig, map[string][]byte{
		secret.KubeconfigDataName: kubeconfigData,
	})
}

// secretApplyConfiguration turns a desired Secret into a server-side apply configuration.
func secretApplyConfiguration(s *corev1.Secret) *corev1ac.SecretApplyConfiguration {
	ac := corev1ac.Secret(s.Name, s.Namespace).
		WithLabels(s.Labels).
		WithType(s.Type).
		WithData(s.Data)
	for _, ref := range s.OwnerReferences {
		ac.WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(ref.APIVersion).
			WithKind(ref.Kind).
			WithName(ref.Name).
			WithUID(ref.UID).
			WithController(ref.Controller != nil && *ref.Controller).
			WithBlockOwnerDeletion(ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion))
	}
	return ac
}

// secretUpToDate reports whether existing already has the type, data, labels and controller of
// desired.
func secretUpToDate(existing, desired *corev1.Secret) bool {
	if existing.Type != desired.Type || len(existing.Data) != len(desired.Data) {
		return false
	}
	for key, value := range desired.Data {
		if !bytes.Equal(existing.Data[key], value) {
			return false
		}
	}
	for key, value := range desired.Labels {
		if existing.Labels[key] != value {
			return false
		}
	}
	controller := metav1.GetControllerOf(existing)
	return controller != nil && controller.UID == desired.OwnerReferences[0].UID
}

// controlledBy reports whether lcp is the controller of s.
func controlledBy(s *corev1.Secret, lcp *controlplanev1.LocalControlPlane) bool {
	controller := metav1.GetControllerOf(s)
	return controller != nil && controller.UID == lcp.UID
}

// adminKubeconfig issues a kubeconfig for server with a new system:masters client certificate
// signed by ca, named as CAPI's util/kubeconfig names it: cluster <cluster>, user
// <cluster>-admin, context <cluster>-admin@<cluster>.
func adminKubeconfig(clusterName, server string, ca pki.KeyPair) ([]byte, error) {
	if ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("issuing the admin kubeconfig: the control plane reported no CA")
	}
	config, err := kubeconfig.New(clusterName, server, ca.Cert, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("issuing the admin kubeconfig: %w", err)
	}
	data, err := clientcmd.Write(*config)
	if err != nil {
		return nil, fmt.Errorf("encoding the admin kubeconfig: %w", err)
	}
	return data, nil
}

// kubeconfigCurrent reports whether the kubeconfig in s points at server, trusts ca, and has
// client certificates that need no renewal yet (CAPI renews them at half their one-year life).
func kubeconfigCurrent(s *corev1.Secret, clusterName, server string, ca pki.KeyPair, now time.Time) (bool, error) {
	config, err := clientcmd.Load(s.Data[secret.KubeconfigDataName])
	if err != nil {
		return false, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	cluster, ok := config.Clusters[clusterName]
	if !ok || cluster.Server != server || !sameCertificate(cluster.CertificateAuthorityData, ca.Cert) {
		return false, nil
	}
	if len(config.AuthInfos) == 0 {
		return false, nil
	}
	for _, user := range config.AuthInfos {
		cert, err := certs.DecodeCertPEM(user.ClientCertificateData)
		if err != nil || cert == nil {
			return false, fmt.Errorf("decoding the client certificate: %w", err)
		}
		if cert.NotAfter.Sub(now) < certs.ClientCertificateRenewalDuration {
			return false, nil
		}
	}
	return true, nil
}

// sameCertificate reports whether a PEM block holds the certificate want.
func sameCertificate(data []byte, want *x509.Certificate) bool {
	cert, err := certs.DecodeCertPEM(data)
	return err == nil && cert != nil && want != nil && cert.Equal(want)
}
