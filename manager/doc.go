// Package manager runs Flotilla's controllers: one controller-runtime manager into which
// components plug their reconcilers and webhooks (`flotilla manager --components=...`).
//
// Every manager, whatever its components, has
//
//   - Cluster API's cluster cache (controllers/clustercache), the only way components reach
//     workload clusters, and Cluster API's default field indexes;
//   - health (/healthz) and readiness (/readyz) probes, and a Prometheus metrics endpoint served
//     over HTTPS to clients the API server authorizes to get /metrics, both on 127.0.0.1 with a
//     port the kernel picks by default (ProbeAddress, MetricsAddress; serving.go);
//   - leader election with a Lease in flotilla-system, named after the components it runs, so
//     that managers running different components do not compete;
//   - an admission webhook server on 127.0.0.1 with a self-signed certificate generated at start.
//     The management cluster's API servers run on the same machine, so the manager registers
//     Validating/MutatingWebhookConfigurations that call it by URL
//     (https://127.0.0.1:<port>/<path>) with that certificate as caBundle. A webhook is registered
//     when a component serves its path and its configuration is among the generated manifests
//     (package config: from kubebuilder webhook markers, and Cluster API's);
//   - the namespace flotilla-system and the ConfigMap flotilla-system/flotilla-version, which
//     records the manager's version for version skew checks.
//
// The "capi" component embeds Cluster API v1.14's core reconcilers (Cluster, Machine, MachineSet,
// MachineDeployment, MachineHealthCheck), its ClusterClass and managed topology reconcilers
// (ClusterClass, Cluster topology, MachineDeployment and MachineSet topology, with the
// ClusterTopology feature gate on), its ClusterResourceSet reconcilers, and their admission
// webhooks, wired as Cluster API's own core/main.go wires them, without the runtime SDK or
// MachinePools. The "kubeadm" component embeds the kubeadm bootstrap and control plane providers
// with their webhooks. Other components are listed in components.go.
package manager
