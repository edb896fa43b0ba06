package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/topology"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// classReconcileWait bounds how long validation waits for Cluster API to reconcile a ClusterClass
// (to learn its variables' schemas) that was created or changed a moment ago.
const classReconcileWait = 5 * time.Second

// validateTopologyClass validates the topology of a Cluster against its ClusterClass with
// Cluster API's own rules (core/webhooks/admission): the ClusterClass exists in the Cluster's
// namespace, every variable holds a value its schema accepts (the error names the variable),
// every worker node group names a worker class of the class, and the version is one the class
// allows. oldC is nil on create.
func (w *Cluster) validateTopologyClass(ctx context.Context, oldC, newC *flotillav1.Cluster) field.ErrorList {
	if newC.Spec.Topology == nil {
		return nil
	}
	path := field.NewPath("spec", "topology", "class")
	version, err := binaries.ResolveMinor(newC.Spec.KubernetesVersion)
	if err != nil {
		return nil // validation.ValidateCluster reports it
	}
	if w.Reader == nil {
		return field.ErrorList{field.InternalError(path, errors.New("the webhook has no client to read ClusterClasses"))}
	}
	class, err := w.reconciledClass(ctx, newC)
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{topology.ClassNotFound(path, newC)}
	case errors.Is(err, errClassNotReconciled):
		return field.ErrorList{field.Invalid(path, newC.Spec.Topology.Class, fmt.Sprintf(
			"Cluster API has not reconciled ClusterClass %s yet, so its variables cannot be checked: retry in a moment, and if it persists see the class's conditions (kubectl get clusterclass %s -n %s -o yaml)",
			class.Name, class.Name, class.Namespace))}
	case err != nil:
		return field.ErrorList{field.InternalError(path, err)}
	}

	capi := capiClusterOf(newC, version)
	var oldCAPI *clusterv1.Cluster
	if oldC != nil && oldC.Spec.Topology != nil {
		if oldVersion, err := binaries.ResolveMinor(oldC.Spec.KubernetesVersion); err == nil {
			oldCAPI = capiClusterOf(oldC, oldVersion)
		}
	}
	capiWebhook := &coreadmission.Cluster{Client: w.Reader}
	errs := capiWebhook.DefaultAndValidateVariables(ctx, capi, oldCAPI, class)
	errs = append(errs, coreadmission.ValidateClusterForClusterClass(capi, class)...)
	return topology.FlotillaErrors(errs)
}

// errClassNotReconciled: the ClusterClass's status does not describe its current spec yet.
var errClassNotReconciled = errors.New("ClusterClass not reconciled")

// reconciledClass reads the ClusterClass c names, waiting up to classReconcileWait for Cluster
// API to have reconciled it: its status then holds the schemas of its variables. The error is
// NotFound when there is no such class, errClassNotReconciled (with the class) when the wait
// ran out.
func (w *Cluster) reconciledClass(ctx context.Context, c *flotillav1.Cluster) (*clusterv1.ClusterClass, error) {
	class := &clusterv1.ClusterClass{}
	key := ctrlclient.ObjectKey{Namespace: c.Namespace, Name: c.Spec.Topology.Class}
	var lastErr error
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, classReconcileWait, true, func(ctx context.Context) (bool, error) {
		lastErr = w.Reader.Get(ctx, key, class)
		switch {
		case apierrors.IsNotFound(lastErr):
			return true, nil
		case lastErr != nil:
			return false, nil //nolint:nilerr // a failed read is retried until the wait runs out
		case class.Status.ObservedGeneration != class.Generation || !conditions.IsTrue(class, clusterv1.ClusterClassVariablesReadyCondition):
			lastErr = errClassNotReconciled
			return false, nil
		}
		return true, nil
	})
	if lastErr != nil {
		return class, lastErr
	}
	return class, nil
}

// capiClusterOf is the CAPI Cluster the reconciler makes of c, as far as its topology goes.
func capiClusterOf(c *flotillav1.Cluster, version string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
		Spec:       clusterv1.ClusterSpec{Topology: topology.Of(c, version)},
	}
}
