package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

// Client runs Flotilla's workflows on this machine.
type Client struct {
	// Home is $FLOTILLA_HOME: where local clusters keep their data.
	Home string
	// BinRoot is the control plane binary cache root.
	BinRoot string
	// Executable is the flotilla binary started as the manager of local management clusters.
	Executable string
	// Out receives progress.
	Out io.Writer
	// WaitTimeout bounds each wait for a cluster to become Ready.
	WaitTimeout time.Duration
	// Version is this CLI's version as CheckCompatibility compares it with management clusters';
	// the binary's own (pkg/version) when empty.
	Version string
}

// New returns a Client for home and binRoot that reports progress to out.
func New(home, binRoot string, out io.Writer) (*Client, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the flotilla executable: %w", err)
	}
	return &Client{Home: home, BinRoot: binRoot, Executable: exe, Out: out, WaitTimeout: 10 * time.Minute}, nil
}

// clusterDir is where a local cluster keeps its data.
func (c *Client) clusterDir(name string) string {
	return controlplane.ClusterDir(c.Home, name)
}

// bootstrapName is the name of the ephemeral cluster that creates management cluster name.
func bootstrapName(name string) string { return name + "-bootstrap" }

// localKubeconfigPath is the admin kubeconfig of a local cluster that the CLI keeps for itself
// (the manager of a management cluster runs with identities of its own: identities.go).
func (c *Client) localKubeconfigPath(name string) string {
	return filepath.Join(c.clusterDir(name), "admin.kubeconfig")
}

// UserKubeconfigPath is where the kubeconfig handed to the user goes: ./<name>/<name>.kubeconfig.
func UserKubeconfigPath(outDir, name string) string {
	return filepath.Join(outDir, name, name+".kubeconfig")
}

// RESTConfig loads a kubeconfig file and says what to do when it is missing or broken.
func RESTConfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w (pass the management cluster's kubeconfig, such as mgmt/mgmt.kubeconfig)", path, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// KubeconfigNamespace is the namespace of the current context of the kubeconfig file path,
// "default" when it names none or the file does not load.
func KubeconfigNamespace(path string) string {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// KubeClient returns a client for the cluster behind the kubeconfig file path, with every API
// Flotilla uses registered.
func KubeClient(path string) (ctrlclient.Client, error) {
	cfg, err := RESTConfig(path)
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster of %s: %w", path, err)
	}
	return webhookRetrying{c}, nil
}

// A write is retried every webhookRetryInterval, for up to webhookRetryTimeout, while admission
// webhooks cannot be called.
const (
	webhookRetryInterval = 500 * time.Millisecond
	webhookRetryTimeout  = 2 * time.Minute
)

// webhookRetrying is a client whose writes are retried, for up to webhookRetryTimeout, while the
// API server cannot call an admission webhook: the manager that serves the webhooks is
// restarting (its supervisor starts it again within seconds). The API server stored nothing
// then, so every write can be sent again. Other errors are returned at once.
type webhookRetrying struct{ ctrlclient.Client }

func (c webhookRetrying) Create(ctx context.Context, obj ctrlclient.Object, opts ...ctrlclient.CreateOption) error {
	return retryWebhook(ctx, func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c webhookRetrying) Update(ctx context.Context, obj ctrlclient.Object, opts ...ctrlclient.UpdateOption) error {
	return retryWebhook(ctx, func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c webhookRetrying) Patch(ctx context.Context, obj ctrlclient.Object, patch ctrlclient.Patch, opts ...ctrlclient.PatchOption) error {
	return retryWebhook(ctx, func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

func (c webhookRetrying) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...ctrlclient.ApplyOption) error {
	return retryWebhook(ctx, func() error { return c.Client.Apply(ctx, obj, opts...) })
}

func (c webhookRetrying) Delete(ctx context.Context, obj ctrlclient.Object, opts ...ctrlclient.DeleteOption) error {
	return retryWebhook(ctx, func() error { return c.Client.Delete(ctx, obj, opts...) })
}

// retryWebhook runs write until it succeeds, fails otherwise than by an unreachable admission
// webhook, webhookRetryTimeout passes or ctx ends; it returns write's last error.
func retryWebhook(ctx context.Context, write func() error) error {
	var err error
	if perr := poll(ctx, webhookRetryInterval, webhookRetryTimeout, func(context.Context) (bool, error) {
		err = write()
		return err == nil || !webhookUnreachable(err), nil
	}, func() error { return err }); err == nil {
		return perr // nil, or ctx ended before the first write
	}
	return err
}

// webhookUnreachable reports whether err says that the API server could not call an admission
// webhook (as opposed to a webhook that answered and refused).
func webhookUnreachable(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed calling webhook")
}

// loadSpec loads the cluster spec in file for a command that works on management clusters
// (management true) or on workload clusters, and refuses a spec of the other kind, saying what
// to do instead (hint).
func loadSpec(file string, management bool, hint string) (*spec.Spec, error) {
	s, err := spec.Load(file)
	if err != nil {
		return nil, err
	}
	if s.Cluster.Spec.Management != management {
		kind := "workload"
		if s.Cluster.Spec.Management {
			kind = "management"
		}
		return nil, fmt.Errorf("%s: spec.management is %t, so %q is a %s cluster: %s", file, s.Cluster.Spec.Management, s.Cluster.Name, kind, hint)
	}
	return s, nil
}
