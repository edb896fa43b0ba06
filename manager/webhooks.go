package manager

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/flotilla-dev/flotilla/config"
)

// webhookHost is where the webhook server listens: the API servers of a local management cluster
// run on the same machine.
const webhookHost = "127.0.0.1"

// Names of the serving certificate files in the webhook certificate directory.
const (
	webhookCertName = "tls.crt"
	webhookKeyName  = "tls.key"
)

// writeServingCert generates a CA and a serving certificate it signs for 127.0.0.1 and
// localhost, writes the certificate (with the CA) and key into dir, and returns the CA bundle the
// API server needs to trust the webhook server.
func writeServingCert(dir string) (caBundle []byte, err error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(webhookHost, []net.IP{net.ParseIP(webhookHost)}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("generating webhook serving certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating webhook certificate directory: %w", err)
	}
	// The key first: the server reloads the pair when either file changes.
	if err := os.WriteFile(filepath.Join(dir, webhookKeyName), keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing webhook serving key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, webhookCertName), certPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing webhook serving certificate: %w", err)
	}
	// certPEM holds the serving certificate followed by its CA: as a bundle it trusts both.
	return certPEM, nil
}

// recordingServer is a webhook.Server that remembers the paths registered on it, so that the
// manager registers with the API server exactly the webhooks it serves.
type recordingServer struct {
	webhook.Server

	mu    sync.Mutex
	paths map[string]bool
}

func newRecordingServer(s webhook.Server) *recordingServer {
	return &recordingServer{Server: s, paths: map[string]bool{}}
}

// Register records path and registers hook on the wrapped server.
func (s *recordingServer) Register(path string, hook http.Handler) {
	s.mu.Lock()
	s.paths[path] = true
	s.mu.Unlock()
	s.Server.Register(path, hook)
}

// serves reports whether a hook is registered at path.
func (s *recordingServer) serves(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[path]
}

// sharedWebhookServer hands the manager of a component the process's one webhook server: the
// component's webhooks register on it, and the manager of ManagerIdentity, which owns it, starts
// it.
type sharedWebhookServer struct{ *recordingServer }

// Start waits for ctx to end: the server runs in the manager that owns it.
func (sharedWebhookServer) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// webhookConfigurations builds the configurations to register: one Mutating and one
// ValidatingWebhookConfiguration named name, holding every generated webhook (from mutating and
// validating) whose path is served, called at baseURL+path with caBundle. A returned
// configuration with no webhooks is one to delete.
func webhookConfigurations(name, baseURL string, caBundle []byte, served func(path string) bool,
	mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration,
) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	clientConfig := func(cc admissionregistrationv1.WebhookClientConfig) (admissionregistrationv1.WebhookClientConfig, bool) {
		if cc.Service == nil || cc.Service.Path == nil || !served(*cc.Service.Path) {
			return cc, false
		}
		url := baseURL + *cc.Service.Path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}, true
	}

	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	m.Name = name
	for _, cfg := range mutating {
		for _, wh := range cfg.Webhooks {
			cc, ok := clientConfig(wh.ClientConfig)
			if !ok {
				continue
			}
			wh.ClientConfig = cc
			m.Webhooks = append(m.Webhooks, wh)
		}
	}

	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	v.Name = name
	for _, cfg := range validating {
		for _, wh := range cfg.Webhooks {
			cc, ok := clientConfig(wh.ClientConfig)
			if !ok {
				continue
			}
			wh.ClientConfig = cc
			v.Webhooks = append(v.Webhooks, wh)
		}
	}
	return m, v
}

// RBAC of the webhook registrar (ManagerIdentity, the only identity allowed to register webhooks:
// one that could would see, and could change, every object the API server admits). The
// configurations are named after the manager (flotilla-manager, flotilla-manager-capi-...).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;create;patch;delete

// webhookRegistrar registers the manager's webhook configurations with the API server once the
// webhook server listens. It runs on every replica, leader or not: all of them serve webhooks.
type webhookRegistrar struct {
	client   ctrlclient.Client
	server   *recordingServer
	name     string
	baseURL  string
	caBundle []byte

	registered atomic.Bool
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (r *webhookRegistrar) NeedLeaderElection() bool { return false }

// Start waits for the webhook server, then registers the configurations, retrying until it
// succeeds or ctx ends.
func (r *webhookRegistrar) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-registrar")
	mutating, validating, err := config.WebhookConfigurations()
	if err != nil {
		return fmt.Errorf("reading webhook manifests: %w", err)
	}
	started := r.server.StartedChecker()
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := started(nil); err != nil {
			return false, nil //nolint:nilerr // the server is not listening yet: keep waiting
		}
		m, v := webhookConfigurations(r.name, r.baseURL, r.caBundle, r.server.serves, mutating, validating)
		if err := r.apply(ctx, m, len(m.Webhooks) == 0); err != nil {
			log.Error(err, "Registering webhooks failed, retrying", "kind", "MutatingWebhookConfiguration")
			return false, nil
		}
		if err := r.apply(ctx, v, len(v.Webhooks) == 0); err != nil {
			log.Error(err, "Registering webhooks failed, retrying", "kind", "ValidatingWebhookConfiguration")
			return false, nil
		}
		log.Info("Registered webhooks", "name", r.name, "url", r.baseURL, "mutating", len(m.Webhooks), "validating", len(v.Webhooks))
		return true, nil
	})
	if err != nil {
		// ctx ended: the manager is stopping.
		return nil //nolint:nilerr // stopping is not a failure
	}
	r.registered.Store(true)
	return nil
}

// apply server-side applies obj, or deletes it when empty (no webhook of that kind is served).
func (r *webhookRegistrar) apply(ctx context.Context, obj ctrlclient.Object, empty bool) error {
	gvk, err := r.client.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	if empty {
		if err := r.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.client.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(fieldOwner), ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return nil
}

// checker is a readiness check that passes once the webhooks are registered.
func (r *webhookRegistrar) checker(_ *http.Request) error {
	if !r.registered.Load() {
		return fmt.Errorf("webhook configurations not registered yet")
	}
	return nil
}

// webhookBaseURL is the URL prefix the API server calls the webhook server at.
func webhookBaseURL(port int) string {
	return "https://" + net.JoinHostPort(webhookHost, strconv.Itoa(port))
}
