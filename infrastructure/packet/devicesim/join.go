package devicesim

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// kubeadmJoin plays kubeadm join: discovery of the control plane with the bootstrap token and
// the pinned CA, then the device's Node.
func (r *Runtime) kubeadmJoin(ctx context.Context, d metal.Device, cfg *kubeadmConfig) error {
	log := logr.FromContextOrDiscard(ctx)
	join := cfg.join
	if join == nil || join.Discovery.BootstrapToken == nil {
		return errors.New("kubeadm join: the config has no JoinConfiguration with discovery.bootstrapToken")
	}
	discovery := join.Discovery.BootstrapToken
	version := ""
	if cfg.cluster != nil {
		version = cfg.cluster.KubernetesVersion
	}
	node, err := desiredNode(d, &join.NodeRegistration, version, join.ControlPlane != nil)
	if err != nil {
		return fmt.Errorf("kubeadm join: %w", err)
	}
	log.Info("kubeadm join: discovering the control plane", "endpoint", discovery.APIServerEndpoint)
	var cp *controlPlane
	for {
		cp, err = r.discover(ctx, discovery.APIServerEndpoint, discovery.Token, discovery.CACertHashes, discovery.UnsafeSkipCAVerification)
		if err == nil {
			break
		}
		log.Info("kubeadm join: discovery failed; retrying", "reason", err.Error())
		if err := wait(ctx); err != nil {
			return err
		}
	}
	if node.Status.NodeInfo.KubeletVersion == "" {
		// kubeadm join reads the version from the cluster; the kubelet is of that version.
		v, err := cp.client.Discovery().ServerVersion()
		if err != nil {
			return fmt.Errorf("kubeadm join: %w", err)
		}
		node.Status.NodeInfo.KubeletVersion = v.GitVersion
	}
	if err := createAll(ctx, cp.client, []any{node}); err != nil {
		return fmt.Errorf("kubeadm join: %w", err)
	}
	log.Info("kubeadm join done: the Node is registered", "endpoint", discovery.APIServerEndpoint, "node", node.Name, "controlPlane", join.ControlPlane != nil)
	return nil
}

// discover finds the control plane serving endpoint and checks the join's credentials against
// it, as kubeadm's token discovery does: the CA is one the hashes pin, the endpoint's serving
// certificate verifies against it, and the bootstrap token exists in the cluster.
func (r *Runtime) discover(ctx context.Context, endpoint, token string, caHashes []string, skipCAVerification bool) (*controlPlane, error) {
	r.mu.Lock()
	cp := r.controlPlanes[endpoint]
	r.mu.Unlock()
	if cp == nil {
		return nil, fmt.Errorf("no simulated device serves a control plane at %s yet", endpoint)
	}
	if !skipCAVerification && !slices.Contains(caHashes, caCertHash(cp.ca)) {
		return nil, fmt.Errorf("the cluster CA at %s (%s) matches none of caCertHashes", endpoint, caCertHash(cp.ca))
	}
	if err := verifyServing(ctx, endpoint, cp.ca); err != nil {
		return nil, err
	}
	if err := checkToken(ctx, cp, token); err != nil {
		return nil, err
	}
	return cp, nil
}

// caCertHash is kubeadm's public key pin of a CA: "sha256:" and the hex SHA-256 of its
// Subject Public Key Info.
func caCertHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// verifyServing connects to endpoint and verifies its serving certificate against ca.
func verifyServing(ctx context.Context, endpoint string, ca *x509.Certificate) error {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return fmt.Errorf("connecting to %s with the pinned CA: %w", endpoint, err)
	}
	return conn.Close()
}

// checkToken checks that the bootstrap token "<id>.<secret>" exists in the cluster, may
// authenticate and has not expired.
func checkToken(ctx context.Context, cp *controlPlane, token string) error {
	id, secret, ok := strings.Cut(token, ".")
	if !ok || id == "" || secret == "" {
		return errors.New("the bootstrap token is not of the form <id>.<secret>")
	}
	s, err := cp.client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("bootstrap token %s: %w", id, err)
	}
	switch {
	case string(s.Data["token-secret"]) != secret:
		return fmt.Errorf("bootstrap token %s: the secret does not match", id)
	case string(s.Data["usage-bootstrap-authentication"]) != "true":
		return fmt.Errorf("bootstrap token %s may not be used for authentication", id)
	}
	if exp := string(s.Data["expiration"]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil || time.Now().After(t) {
			return fmt.Errorf("bootstrap token %s expired (%s)", id, exp)
		}
	}
	return nil
}
