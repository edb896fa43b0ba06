package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// metricsReader names the ServiceAccount (in flotilla-system) as which the CLI reads the metrics
// of a local manager, and the ClusterRole and ClusterRoleBinding that let it get /metrics and
// nothing else. The manager serves metrics only to those the API server authorizes, and
// authenticates bearer tokens only (manager/serving.go), while a local admin holds a client
// certificate.
const metricsReader = "flotilla-metrics-reader"

// metricsTokenSeconds is how long the token of one scrape lasts (the API server's minimum).
const metricsTokenSeconds = 600

// ManagerMetrics returns the Prometheus metrics (text format) of the manager of local cluster
// name: with the admin kubeconfig it creates the metricsReader ServiceAccount and its role when
// missing, asks a short-lived token of it, and scrapes https://<metrics address>/metrics as
// recorded by the manager, trusting the manager's serving certificate only.
func (c *Client) ManagerMetrics(ctx context.Context, name string) ([]byte, error) {
	serving, err := c.managerServing(name)
	if err != nil {
		return nil, err
	}
	if serving.Metrics == "" {
		return nil, fmt.Errorf("the manager of %s serves no metrics", name)
	}
	token, err := c.metricsToken(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of the manager of %s: %w", name, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(c.managerCertDir(name), "tls.crt"))
	if err != nil {
		return nil, fmt.Errorf("reading the manager's serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+serving.Metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of the manager of %s: %w", name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the metrics of the manager of %s: %s", name, resp.Status)
	}
	return body, nil
}

// metricsToken makes the metricsReader objects exist in local cluster name and returns a token
// of the ServiceAccount.
func (c *Client) metricsToken(ctx context.Context, name string) (string, error) {
	kc, err := KubeClient(c.localKubeconfigPath(name))
	if err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: flotillav1.SystemNamespace, Name: metricsReader}}
	objs := []ctrlclient.Object{
		sa,
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
		},
	}
	for _, obj := range objs {
		if err := kc.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, metricsReader, err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](metricsTokenSeconds)}}
	if err := kc.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("asking a token of %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return tr.Status.Token, nil
}
