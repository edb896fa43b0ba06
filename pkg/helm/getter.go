package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/validation"
)

// discoveryTTL is how long a cluster's discovered version and APIs are trusted. Helm alone would
// discover them again for every install and upgrade; the engine does so when they are older than
// this, after it created CRDs, and after an action failed (so a kind that another tool added is
// seen by the retry at once, and by templates' .Capabilities within this time).
const discoveryTTL = time.Minute

// clusterClients are the expensive, shareable parts of a connection to one cluster: a discovery
// cache, a REST mapper over it and the capabilities Helm's templates see. They are safe for
// concurrent use.
type clusterClients struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.ResettableRESTMapper

	// mu guards caps, which were discovered at discoveredAt; nil when they must be discovered.
	mu           sync.Mutex
	caps         *common.Capabilities
	discoveredAt time.Time
}

// capabilities returns the cluster's version and API versions as Helm's templates see them (a
// copy the caller may keep), discovering them again, with the REST mapper, when they are older
// than discoveryTTL or were invalidated. Concurrent callers wait for one discovery.
func (c *clusterClients) capabilities() (*common.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps != nil && time.Since(c.discoveredAt) < discoveryTTL {
		return c.caps.Copy(), nil
	}
	c.discovery.Invalidate()
	c.mapper.Reset()
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the version of %s: %w", c.config.Host, err)
	}
	// As in Helm: an API group that fails discovery (an orphaned APIService) leaves the others.
	apis, err := action.GetVersionSet(c.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the APIs of %s: %w", c.config.Host, err)
	}
	c.caps = &common.Capabilities{
		KubeVersion: common.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		APIVersions: apis,
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}
	c.discoveredAt = time.Now()
	return c.caps.Copy(), nil
}

// recordsClient returns a client of the cluster's release records for one action. Each action
// has its own, as with Helm's own driver, so that its client-side rate limit is the action's: one
// shared by every release of a cluster throttled the releases of a busy cluster (each reconcile
// reads its release's records), which held healthy releases back seconds behind a hanging one
// (addons TestAHangingReleaseDelaysNoOther).
func (c *clusterClients) recordsClient() (corev1client.CoreV1Interface, error) {
	core, err := corev1client.NewForConfig(c.config)
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", c.config.Host, err)
	}
	return core, nil
}

// invalidate makes the next capabilities discover the cluster again.
func (c *clusterClients) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.caps = nil
}

// clientCache keeps clusterClients per cluster identity (host and credentials), so discovery is
// not redone from nothing on every call.
type clientCache struct {
	mu      sync.Mutex
	clients map[string]*clusterClients
}

// maxCachedClusters bounds the cache; past it the cache starts over (clusters that come back
// simply discover again).
const maxCachedClusters = 1024

// clientsFor returns the cached clients of cfg's cluster, creating them when needed.
func (c *clientCache) clientsFor(cfg *rest.Config) (*clusterClients, error) {
	if cfg == nil {
		return nil, fmt.Errorf("no REST config for the cluster")
	}
	key := configKey(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[key]; ok {
		return cl, nil
	}
	config := rest.CopyConfig(cfg)
	if config.QPS == 0 {
		config.QPS = 50
	}
	if config.Burst == 0 {
		config.Burst = 100
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client for %s: %w", config.Host, err)
	}
	cached := memory.NewMemCacheClient(dc)
	cl := &clusterClients{
		config:    config,
		discovery: cached,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(cached),
	}
	if c.clients == nil || len(c.clients) >= maxCachedClusters {
		c.clients = map[string]*clusterClients{}
	}
	c.clients[key] = cl
	return cl, nil
}

// configKey identifies a cluster and the identity used to reach it. Credentials enter only as a
// hash, and the key never leaves the process.
func configKey(cfg *rest.Config) string {
	h := sha256.New()
	for _, part := range [][]byte{
		[]byte(cfg.Host), []byte(cfg.APIPath), []byte(cfg.ServerName),
		cfg.CAData, []byte(cfg.CAFile), cfg.CertData, []byte(cfg.CertFile), cfg.KeyData, []byte(cfg.KeyFile),
		[]byte(cfg.BearerToken), []byte(cfg.BearerTokenFile), []byte(cfg.Username), []byte(cfg.Password),
		[]byte(cfg.Impersonate.UserName), []byte(fmt.Sprint(cfg.Insecure)),
	} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return cfg.Host + "#" + hex.EncodeToString(h.Sum(nil))
}

// restClientGetter is Helm's view of one cluster and namespace, built in memory from a
// rest.Config: no kubeconfig file is ever written.
type restClientGetter struct {
	clients   *clusterClients
	namespace string
}

var _ genericclioptions.RESTClientGetter = &restClientGetter{}

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.clients.config), nil
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.clients.discovery, nil
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return g.clients.mapper, nil
}

func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return &inMemoryClientConfig{getter: g}
}

// inMemoryClientConfig answers the questions kubectl's factory asks of a kubeconfig (mostly:
// which namespace) without one.
type inMemoryClientConfig struct {
	getter *restClientGetter
}

var _ clientcmd.ClientConfig = &inMemoryClientConfig{}

func (c *inMemoryClientConfig) RawConfig() (clientcmdapi.Config, error) {
	// The raw form would carry credentials; nothing in Helm's code path needs it.
	return clientcmdapi.Config{}, nil
}

func (c *inMemoryClientConfig) ClientConfig() (*rest.Config, error) {
	return c.getter.ToRESTConfig()
}

func (c *inMemoryClientConfig) Namespace() (string, bool, error) {
	return c.getter.namespace, false, nil
}

func (c *inMemoryClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return &clientcmd.ClientConfigLoadingRules{}
}

// serverValidated is Helm's client factory without client-side schema validation. Helm checks
// objects it builds with validation (the namespace it creates, and the manifest unless OpenAPI
// validation is disabled, as the engine does) by asking the cluster's OpenAPI v3 document
// whether the server validates fields itself, fetching and parsing that document anew for every
// action: most of an install's CPU. The answer is always yes (every supported Kubernetes version
// does), and the releases are applied server-side, which Helm sends with fieldValidation=Strict:
// the API server validates every object anyway.
type serverValidated struct{ kube.Factory }

func (serverValidated) Validator(string) (validation.Schema, error) {
	return validation.NullSchema{}, nil
}
