package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterClients are the expensive, shareable parts of a connection to one cluster: a discovery
// cache and a REST mapper over it. They are safe for concurrent use.
type clusterClients struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.ResettableRESTMapper
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
