package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// planUpgrade compares the spec's objects with what the management cluster holds by applying
// them in a server-side dry run: the webhooks judge the change (their refusal is returned as
// is), and an object whose generation would move is one the upgrade changes.
func planUpgrade(ctx context.Context, kc ctrlclient.Client, objs []ctrlclient.Object, current *flotillav1.Cluster) (*upgradePlan, error) {
	plan := &upgradePlan{Namespace: current.Namespace, Name: current.Name, FromMinor: current.Spec.KubernetesVersion}
	var desired *flotillav1.Cluster
	for _, obj := range objs {
		u, err := toUnstructured(kc, obj)
		if err != nil {
			return nil, err
		}
		label := u.GetKind() + " " + u.GetName()
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(u.GroupVersionKind())
		err = kc.Get(ctx, ctrlclient.ObjectKeyFromObject(u), existing)
		switch {
		case apierrors.IsNotFound(err):
			existing = nil
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", label, err)
		}
		if err := kc.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), fieldOwner, ctrlclient.ForceOwnership, ctrlclient.DryRunAll); err != nil {
			return nil, fmt.Errorf("the management cluster refuses the new spec of %s: %w", label, err)
		}
		switch {
		case existing == nil:
			plan.Changes = append(plan.Changes, "creates "+label)
		case u.GetGeneration() != existing.GetGeneration():
			plan.Changes = append(plan.Changes, "changes "+label)
		}
		if _, ok := obj.(*flotillav1.Cluster); ok {
			desired = &flotillav1.Cluster{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, desired); err != nil {
				return nil, fmt.Errorf("reading the dry run of %s: %w", label, err)
			}
		}
	}
	if desired == nil {
		return nil, errors.New("the spec holds no Cluster")
	}
	plan.ToMinor = desired.Spec.KubernetesVersion
	plan.Workers = workerChanges(current, desired)
	return plan, nil
}

// upgradePlan is what an upgrade changes.
type upgradePlan struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Management is the name of the management cluster.
	Management string `json:"management"`
	// FromMinor and ToMinor are spec.kubernetesVersion before and after ("1.35", "1.36").
	FromMinor string `json:"fromMinor"`
	ToMinor   string `json:"toMinor"`
	// Version is the full version the cluster runs when done ("v1.36.3").
	Version string `json:"version"`
	// Workers are the worker node groups whose count changes.
	Workers []workerChange `json:"workers,omitempty"`
	// Changes lists the objects the new spec creates or changes, such as "changes Cluster w1".
	Changes []string `json:"changes,omitempty"`
}

// workerChange is a worker node group's count before and after; a group that is new or removed
// has Added or Removed set.
type workerChange struct {
	Group   string `json:"group"`
	From    int32  `json:"from"`
	To      int32  `json:"to"`
	Added   bool   `json:"added,omitempty"`
	Removed bool   `json:"removed,omitempty"`
}

// empty is true when the spec changes no object.
func (p *upgradePlan) empty() bool { return len(p.Changes) == 0 }

func (p *upgradePlan) versionChanges() bool { return p.FromMinor != p.ToMinor }

// describe says what the upgrade will do, one line per fact.
func (p *upgradePlan) describe() []string {
	if p.empty() {
		return []string{fmt.Sprintf("the spec changes nothing: %s stays at Kubernetes %s with the same workers", p.Name, p.FromMinor)}
	}
	var lines []string
	if p.versionChanges() {
		lines = append(lines, fmt.Sprintf("Kubernetes %s → %s (%s): the control plane restarts on the new version, then workers are replaced one at a time",
			p.FromMinor, p.ToMinor, p.Version))
	}
	for _, w := range p.Workers {
		switch {
		case w.Added:
			lines = append(lines, fmt.Sprintf("worker node group %s: new, %d workers", w.Group, w.To))
		case w.Removed:
			lines = append(lines, fmt.Sprintf("worker node group %s: removed with its %d workers", w.Group, w.From))
		default:
			lines = append(lines, fmt.Sprintf("worker node group %s: %d → %d workers", w.Group, w.From, w.To))
		}
	}
	return append(lines, strings.Join(p.Changes, ", "))
}

// workerChanges lists the worker node groups whose count the change from current to desired
// moves, in the desired order, then the removed ones.
func workerChanges(current, desired *flotillav1.Cluster) []workerChange {
	before := map[string]int32{}
	for _, g := range current.Spec.WorkerNodeGroups {
		before[g.Name] = g.Count
	}
	var changes []workerChange
	for _, g := range desired.Spec.WorkerNodeGroups {
		from, existed := before[g.Name]
		delete(before, g.Name)
		switch {
		case !existed:
			changes = append(changes, workerChange{Group: g.Name, To: g.Count, Added: true})
		case from != g.Count:
			changes = append(changes, workerChange{Group: g.Name, From: from, To: g.Count})
		}
	}
	removed := make([]string, 0, len(before))
	for name := range before {
		removed = append(removed, name)
	}
	slices.Sort(removed)
	for _, name := range removed {
		changes = append(changes, workerChange{Group: name, From: before[name], Removed: true})
	}
	return changes
}

// desiredWorkers is the number of workers a Cluster asks for.
func desiredWorkers(c *flotillav1.Cluster) int32 {
	var n int32
	for _, g := range c.Spec.WorkerNodeGroups {
		n += g.Count
	}
	return n
}
