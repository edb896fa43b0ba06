package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

func newCAPICluster() *clusterv1.Cluster { return &clusterv1.Cluster{} }

// readyPollInterval is how often most of the CLI's waits read what they wait for: one GET,
// cheap next to the latency a coarser interval adds to every wait on average.
const readyPollInterval = 250 * time.Millisecond

// poll is every wait of the CLI: it asks done every interval, the first time at once, until done
// reports true or an error, ctx ends, or timeout passes. When timeout (or ctx's own deadline)
// passes, the error is timedOut's, which says what was awaited and what to look at; when ctx is
// canceled, ctx's error; otherwise done's.
func poll(ctx context.Context, interval, timeout time.Duration, done wait.ConditionWithContextFunc, timedOut func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, interval, true, done)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return timedOut()
	}
	return err
}

// waitClusterReady polls the Flotilla Cluster until its Ready condition is True for the current
// generation, printing each change of its conditions, with the time since it began waiting, so
// long waits show progress.
func (c *Client) waitClusterReady(ctx context.Context, kc ctrlclient.Client, namespace, name string) error {
	var last string
	start := time.Now()
	cluster := &flotillav1.Cluster{}
	return poll(ctx, readyPollInterval, c.WaitTimeout, func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, cluster); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, nil //nolint:nilerr // the API server may be restarting; keep polling until the timeout
		}
		if summary := conditionSummary(cluster.Status.Conditions); summary != last {
			fmt.Fprintf(c.Out, "  %6s  %s\n", formatElapsed(time.Since(start)), summary)
			last = summary
		}
		ready := meta.FindStatusCondition(cluster.Status.Conditions, flotillav1.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && cluster.Status.ObservedGeneration == cluster.Generation, nil
	}, func() error {
		return fmt.Errorf("cluster %q is not Ready after %s (last: %s); see `flotilla describe cluster %s` and the manager log under %s",
			name, c.WaitTimeout, last, name, c.Home)
	})
}

// conditionSummary renders conditions on one line: "Ready=False (WaitingForWorkers: 1 of 2 ...)".
func conditionSummary(conds []metav1.Condition) string {
	parts := make([]string, 0, len(conds))
	for _, t := range []string{flotillav1.ControlPlaneReadyCondition, flotillav1.WorkersReadyCondition, flotillav1.ReadyCondition} {
		cond := meta.FindStatusCondition(conds, t)
		if cond == nil {
			continue
		}
		p := fmt.Sprintf("%s=%s", t, cond.Status)
		if cond.Status != metav1.ConditionTrue && cond.Message != "" {
			p += fmt.Sprintf(" (%s)", cond.Message)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "waiting for the cluster controller"
	}
	return strings.Join(parts, ", ")
}

// GetKubeconfig returns the admin kubeconfig of cluster namespace/name from its
// <name>-kubeconfig Secret (key value, per the CAPI contract) in the management cluster behind kc.
func GetKubeconfig(ctx context.Context, kc ctrlclient.Client, namespace, name string) ([]byte, error) {
	s, err := secret.GetFromNamespacedName(ctx, kc, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, secret.Kubeconfig)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cluster %q in namespace %q has no kubeconfig Secret yet: it is still being created (see `flotilla describe cluster %s`)", name, namespace, name)
		}
		return nil, fmt.Errorf("reading the kubeconfig of cluster %q: %w", name, err)
	}
	data, ok := s.Data[secret.KubeconfigDataName]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s has no %q key", namespace, s.Name, secret.KubeconfigDataName)
	}
	return data, nil
}
