//go:build chaos

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// The operations the suite disturbs.
const (
	// chaosPackage is the curated package the package operation installs.
	chaosPackage = "hello-flotilla"
	// chaosAddon is the HelmChartProxy the addon operation applies (docs/examples/hello-addon.yaml).
	chaosAddon = "hello-addon"
	// addonNamespace is where it installs its release.
	addonNamespace = "hello-addon"
)

func (ch *chaos) operations() []operation {
	return []operation{ch.createOperation(), ch.upgradeOperation(), ch.packageOperation(), ch.addonOperation()}
}

// createOperation creates a workload cluster with two workers, and deletes it after.
func (ch *chaos) createOperation() operation {
	name := func(i int) string { return fmt.Sprintf("cc%d", i) }
	return operation{
		name:    "create",
		do:      func(ctx context.Context, i int) error { return ch.createCluster(ctx, name(i), "1.36", 2) },
		cluster: name,
		state: func(ctx context.Context, i int) (string, bool, error) {
			return ch.clusterState(ctx, name(i), "v1.36.3", 2)
		},
		revisions: func(ctx context.Context, i int) ([]string, error) { return ch.machines(ctx, name(i)) },
		cleanup:   func(ctx context.Context, i int) error { return ch.deleteCluster(ctx, name(i)) },
	}
}

// upgradeOperation upgrades a workload cluster with two workers from Kubernetes 1.35 to 1.36.
func (ch *chaos) upgradeOperation() operation {
	name := func(i int) string { return fmt.Sprintf("cu%d", i) }
	return operation{
		name:    "upgrade",
		prepare: func(ctx context.Context, i int) error { return ch.createCluster(ctx, name(i), "1.35", 2) },
		do: func(ctx context.Context, i int) error {
			file := filepath.Join(ch.out, name(i)+"-1.36.yaml")
			data, err := spec.Generate(spec.GenerateOptions{Name: name(i), Provider: spec.ProviderLocal, KubernetesVersion: "1.36", Workers: 2})
			if err != nil {
				return err
			}
			if err := os.WriteFile(file, data, 0o600); err != nil {
				return err
			}
			return ch.c.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{File: file, Kubeconfig: ch.f.kubeconfig, OutDir: ch.out})
		},
		cluster: name,
		state: func(ctx context.Context, i int) (string, bool, error) {
			return ch.clusterState(ctx, name(i), "v1.36.3", 2)
		},
		revisions: func(ctx context.Context, i int) ([]string, error) { return ch.machines(ctx, name(i)) },
		cleanup:   func(ctx context.Context, i int) error { return ch.deleteCluster(ctx, name(i)) },
	}
}

// packageOperation installs a curated package on the first addon cluster, and deletes it after.
func (ch *chaos) packageOperation() operation {
	cluster := ch.addonClusters[0]
	return operation{
		name:  "package",
		setUp: ch.setUpAddonClusters,
		do: func(ctx context.Context, _ int) error {
			if _, err := ch.c.InstallPackage(ctx, ch.f.kubeconfig, client.InstallPackageOptions{Cluster: cluster, Package: chaosPackage}); err != nil {
				return err
			}
			_, err := ch.c.WaitPackageReady(ctx, ch.f.kubeconfig, cluster, chaosPackage, 5*time.Minute)
			return err
		},
		cluster: func(int) string { return cluster },
		state: func(ctx context.Context, _ int) (string, bool, error) {
			packages, err := ch.c.GetPackages(ctx, ch.f.kubeconfig, cluster)
			if err != nil {
				return "", false, err
			}
			var lines []string
			complete := len(packages) > 0
			for _, p := range packages {
				ready := meta.IsStatusConditionTrue(p.Status.Conditions, packagesv1.ReadyCondition)
				complete = complete && ready
				lines = append(lines, fmt.Sprintf("package %s Ready=%t version %s", p.Name, ready, p.Status.CurrentVersion))
			}
			deployments, available, err := ch.deployments(ctx, cluster, packagesv1.DefaultTargetNamespace)
			return strings.Join(append(lines, deployments...), "\n"), complete && available, err
		},
		revisions: func(ctx context.Context, _ int) ([]string, error) {
			return ch.releaseRevisions(ctx, cluster, packagesv1.DefaultTargetNamespace)
		},
		cleanup: func(ctx context.Context, _ int) error {
			if err := ch.c.DeletePackage(ctx, ch.f.kubeconfig, cluster, chaosPackage, 3*time.Minute); err != nil {
				return err
			}
			return ch.waitNoRelease(ctx, cluster, packagesv1.DefaultTargetNamespace)
		},
	}
}

// addonOperation applies a HelmChartProxy that installs a chart on the five addon clusters, and
// deletes it after. Run i kills the API server and etcd of one of them.
func (ch *chaos) addonOperation() operation {
	file := filepath.Join(ch.out, chaosAddon+".yaml")
	return operation{
		name:  "addon",
		setUp: ch.setUpAddonClusters,
		do: func(ctx context.Context, _ int) error {
			example, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "hello-addon.yaml"))
			if err != nil {
				return err
			}
			if err := os.WriteFile(file, bytes.ReplaceAll(example, []byte("127.0.0.1:5001"), []byte(ch.registry)), 0o600); err != nil {
				return err
			}
			_, err = ch.c.ApplyFile(ctx, client.ApplyFileOptions{File: file, Kubeconfig: ch.f.kubeconfig, Wait: 5 * time.Minute})
			return err
		},
		cluster: func(i int) string { return ch.addonClusters[i%len(ch.addonClusters)] },
		state: func(ctx context.Context, _ int) (string, bool, error) {
			addons, err := ch.c.GetAddons(ctx, ch.f.kubeconfig, "default")
			if err != nil {
				return "", false, err
			}
			var lines []string
			complete := len(addons.Releases) == len(ch.addonClusters)
			for _, r := range addons.Releases {
				ready := meta.IsStatusConditionTrue(r.Status.Conditions, addonsv1.ReadyCondition)
				complete = complete && ready
				lines = append(lines, fmt.Sprintf("release on %s Ready=%t", r.Spec.ClusterName, ready))
			}
			for _, cluster := range ch.addonClusters {
				deployments, available, err := ch.deployments(ctx, cluster, addonNamespace)
				if err != nil {
					return "", false, err
				}
				complete = complete && available
				for _, d := range deployments {
					lines = append(lines, cluster+": "+d)
				}
			}
			slices.Sort(lines)
			return strings.Join(lines, "\n"), complete, nil
		},
		revisions: func(ctx context.Context, _ int) ([]string, error) {
			var all []string
			for _, cluster := range ch.addonClusters {
				revisions, err := ch.releaseRevisions(ctx, cluster, addonNamespace)
				if err != nil {
					return nil, err
				}
				for _, r := range revisions {
					all = append(all, cluster+"/"+r)
				}
			}
			return all, nil
		},
		cleanup: func(ctx context.Context, _ int) error {
			hcp := &addonsv1.HelmChartProxy{}
			hcp.Namespace, hcp.Name = "default", chaosAddon
			if err := ch.f.admin.Delete(ctx, hcp); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			for _, cluster := range ch.addonClusters {
				if err := ch.waitNoRelease(ctx, cluster, addonNamespace); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// clusterState describes a workload cluster without its name: Ready, its control plane, its
// Machines and Nodes at version, and its processes; complete when each is as asked.
func (ch *chaos) clusterState(ctx context.Context, name, version string, workers int) (string, bool, error) {
	key := ctrlclient.ObjectKey{Namespace: "default", Name: name}
	fc := &flotillav1.Cluster{}
	if err := ch.f.admin.Get(ctx, key, fc); err != nil {
		return "", false, err
	}
	lcp := &controlplanev1.LocalControlPlane{}
	if err := ch.f.admin.Get(ctx, key, lcp); err != nil {
		return "", false, err
	}
	machines := &clusterv1.MachineList{}
	if err := ch.f.admin.List(ctx, machines, ctrlclient.InNamespace("default"), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
		return "", false, err
	}
	running := 0
	for _, m := range machines.Items {
		if m.Status.Phase == string(clusterv1.MachinePhaseRunning) && m.Spec.Version == version && m.DeletionTimestamp.IsZero() {
			running++
		}
	}
	wc, err := ch.workloadClient(name)
	if err != nil {
		return "", false, err
	}
	nodes := &corev1.NodeList{}
	if err := wc.List(ctx, nodes); err != nil {
		return "", false, err
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && n.Status.NodeInfo.KubeletVersion == version {
				ready++
			}
		}
	}
	dir := filepath.Join(ch.f.home, "clusters", name)
	keeper := process.InDir(dir)
	names, err := keeper.Names()
	if err != nil {
		return "", false, err
	}
	var runningProcesses []string
	for _, n := range names {
		if _, ok := keeper.Running(n); ok {
			runningProcesses = append(runningProcesses, n)
		}
	}
	clusterReady := meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition) && fc.Status.ObservedGeneration == fc.Generation
	available := conditions.IsTrue(lcp, controlplanev1.AvailableCondition) && lcp.Status.Version == version
	complete := clusterReady && available && len(machines.Items) == workers && running == workers &&
		len(nodes.Items) == workers && ready == workers && len(runningProcesses) == len(names)
	return strings.Join([]string{
		fmt.Sprintf("cluster Ready=%t", clusterReady),
		fmt.Sprintf("control plane %s Available=%t", lcp.Status.Version, available),
		fmt.Sprintf("machines %d, %d Running at %s (want %d)", len(machines.Items), running, version, workers),
		fmt.Sprintf("nodes %d, %d Ready at %s", len(nodes.Items), ready, version),
		"processes " + strings.Join(runningProcesses, ", ") + " of " + strings.Join(names, ", "),
	}, "\n"), complete, nil
}

// machines returns the UIDs of the Machines of cluster name.
func (ch *chaos) machines(ctx context.Context, name string) ([]string, error) {
	machines := &clusterv1.MachineList{}
	if err := ch.f.admin.List(ctx, machines, ctrlclient.InNamespace("default"), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
		return nil, err
	}
	uids := make([]string, 0, len(machines.Items))
	for _, m := range machines.Items {
		uids = append(uids, string(m.UID))
	}
	return uids, nil
}

// releaseRevisions returns the Helm release records (one Secret per revision) in namespace of
// workload cluster name.
func (ch *chaos) releaseRevisions(ctx context.Context, name, namespace string) ([]string, error) {
	wc, err := ch.workloadClient(name)
	if err != nil {
		return nil, err
	}
	secrets := &corev1.SecretList{}
	if err := wc.List(ctx, secrets, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	revisions := make([]string, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		revisions = append(revisions, s.Name)
	}
	return revisions, nil
}

// waitNoRelease waits until no Helm release is left in namespace of workload cluster name.
func (ch *chaos) waitNoRelease(ctx context.Context, name, namespace string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		revisions, err := ch.releaseRevisions(ctx, name, namespace)
		if err == nil && len(revisions) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("releases left in %s of %s: %v (%v)", namespace, name, revisions, err)
		}
		time.Sleep(time.Second)
	}
}

// deployments describes the Deployments in namespace of workload cluster name, and reports
// whether there are some and every one is available.
func (ch *chaos) deployments(ctx context.Context, name, namespace string) ([]string, bool, error) {
	wc, err := ch.workloadClient(name)
	if err != nil {
		return nil, false, err
	}
	list := &appsv1.DeploymentList{}
	if err := wc.List(ctx, list, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, false, err
	}
	var lines []string
	available := len(list.Items) > 0
	for _, d := range list.Items {
		available = available && d.Status.Replicas > 0 && d.Status.AvailableReplicas == d.Status.Replicas
		lines = append(lines, fmt.Sprintf("deployment %s %d/%d available", d.Name, d.Status.AvailableReplicas, d.Status.Replicas))
	}
	slices.Sort(lines)
	return lines, available, nil
}

// workloadClient returns a client of workload cluster name, from the kubeconfig create wrote.
func (ch *chaos) workloadClient(name string) (ctrlclient.Client, error) {
	return client.KubeClient(client.UserKubeconfigPath(ch.out, name))
}
