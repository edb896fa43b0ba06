package capifeatures

import (
	"fmt"

	"sigs.k8s.io/cluster-api/feature"
)

// Set sets the Cluster API feature gates every Cluster API controller of this
// process reads when it is built, so it runs before any is (the gates are process-wide; setting
// them again is harmless). Setup, the kubeadm component and the in-memory provider's process
// call it.
//   - ClusterTopology on: ClusterClass clusters. The topology reconcilers, Cluster API's Cluster
//     webhook (a Cluster with spec.topology is refused without it) and its default indexes
//     (Clusters by ClusterClass) read it.
//   - ReconcilerRateLimiting off: with it (on by default since Cluster API v1.11) a controller
//     reconciles each object at most once a second, and a cluster's creation is a chain of about
//     fifteen reconciles that each wait for the one before (topology, control plane, its
//     Machine, bootstrap data, infrastructure, then the same for the workers). An in-memory
//     cluster was Ready after 18.5 s with it and 4.9 s without (bench/inmemory_bench_test.go).
//     Each object is still reconciled only when it changes or asks to be, with a back-off per
//     object when it fails.
func Set() error {
	for gate, on := range map[string]bool{
		string(feature.ClusterTopology):        true,
		string(feature.ReconcilerRateLimiting): false,
	} {
		if err := feature.MutableGates.Set(fmt.Sprintf("%s=%t", gate, on)); err != nil {
			return fmt.Errorf("setting Cluster API's %s feature gate: %w", gate, err)
		}
	}
	return nil
}
