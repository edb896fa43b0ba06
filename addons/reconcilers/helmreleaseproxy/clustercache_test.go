package helmreleaseproxy

import (
	"sigs.k8s.io/cluster-api/controllers/clustercache"
)

// CAPI's ClusterCache is what production passes: it must satisfy the three interfaces.
var (
	_ RESTConfigGetter = clustercache.ClusterCache(nil)
	_ clusterSourcer   = clustercache.ClusterCache(nil)
	_ clusterWatcher   = clustercache.ClusterCache(nil)
)
