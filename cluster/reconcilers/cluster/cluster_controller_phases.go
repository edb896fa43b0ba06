package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// Event reasons.
const (
	eventCreated     = "Created"
	eventDeleting    = "Deleting"
	eventDeleted     = "Deleted"
	eventUpgrading   = "Upgrading"
	eventPaused      = "Paused"
	eventApplyFailed = "ApplyFailed"
)

// observe reads the CAPI Cluster and the MachineDeployments of the Cluster from the cache into
// the scope, and lets the provider read its own objects.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	c := s.cluster
	capi := &clusterv1.Cluster{}
	if found, err := r.get(ctx, ctrlclient.ObjectKeyFromObject(c), capi); err != nil {
		return err
	} else if found {
		s.capiCluster = capi
	}

	mds := &clusterv1.MachineDeploymentList{}
	owned := []ctrlclient.ListOption{ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{flotillav1.ClusterNameLabel: c.Name}}
	if err := r.Client.List(ctx, mds, owned...); err != nil {
		return fmt.Errorf("listing MachineDeployments of Cluster %s: %w", klog.KObj(c), err)
	}
	s.machineDeployments = map[string]*clusterv1.MachineDeployment{}
	for i := range mds.Items {
		if group := workerNodeGroupOf(&mds.Items[i]); group != "" {
			s.machineDeployments[group] = &mds.Items[i]
		}
	}
	return s.provider.observe(ctx, s)
}

// workerNodeGroupOf is the worker node group a MachineDeployment of the cluster belongs to, by its
// cluster.flotilla.dev/worker-node-group label; "" when it has none.
func workerNodeGroupOf(md *clusterv1.MachineDeployment) string {
	return md.Labels[flotillav1.WorkerNodeGroupLabel]
}

// resolveInputs checks the spec against the world: the Kubernetes versions are supported, and
// the provider's references name objects of a known kind that exist. What it finds wrong goes to
// s.invalid, each error naming its field; only failures to read are returned.
func (r *Reconciler) resolveInputs(ctx context.Context, s *scope) error {
	c := s.cluster
	spec := field.NewPath("spec")
	var errs field.ErrorList

	if _, err := r.ResolveVersion(c.Spec.KubernetesVersion); err != nil {
		errs = append(errs, field.Invalid(spec.Child("kubernetesVersion"), c.Spec.KubernetesVersion, err.Error()))
	}
	s.groupVersions = map[string]string{}
	for i, group := range c.Spec.WorkerNodeGroups {
		if group.KubernetesVersion == "" {
			continue
		}
		v, err := r.ResolveVersion(group.KubernetesVersion)
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("workerNodeGroups").Index(i).Child("kubernetesVersion"), group.KubernetesVersion, err.Error()))
			continue
		}
		s.groupVersions[group.Name] = v
	}
	err := s.provider.resolve(ctx, s, &errs)
	s.invalid = errs
	return err
}

// getRef reads the object ref names in the Cluster's namespace into obj. A missing object is an
// invalid spec (appended to errs), not an error.
func (r *Reconciler) getRef(ctx context.Context, c *flotillav1.Cluster, path *field.Path, ref flotillav1.Ref, obj ctrlclient.Object, errs *field.ErrorList) error {
	found, err := r.get(ctx, ctrlclient.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, obj)
	if err != nil {
		return err
	}
	if !found {
		*errs = append(*errs, &field.Error{
			Type:     field.ErrorTypeNotFound,
			Field:    path.Child("name").String(),
			BadValue: ref.Name,
			Detail:   fmt.Sprintf("no %s named %q in namespace %q", ref.Kind, ref.Name, c.Namespace),
		})
	}
	return nil
}

// desiredCAPICluster is the CAPI Cluster: what every provider's has (desiredCAPIClusterBase),
// completed by the provider.
func desiredCAPICluster(s *scope, paused bool) *clusterv1.Cluster {
	capi := desiredCAPIClusterBase(s.cluster, paused)
	s.provider.completeCAPICluster(s, capi)
	return capi
}

// reconcileCAPICluster applies the CAPI Cluster. If it turns out to be paused by someone else
// (clusterctl move pauses it before copying), the reconcile stops here and holds (see
// cluster_controller_pause.go); otherwise the Cluster carries clusterctl's block-move
// annotation so a move waits until this reconciler has stepped aside.
func (r *Reconciler) reconcileCAPICluster(ctx context.Context, s *scope) error {
	if s.capiApplied {
		return nil
	}
	c := s.cluster
	existed := s.capiCluster != nil
	capi := desiredCAPICluster(s, false)
	if err := r.apply(ctx, c, capi); err != nil {
		return err
	}
	s.capiCluster, s.capiApplied = capi, true
	if !existed {
		r.Recorder.Eventf(c, capi, corev1.EventTypeNormal, eventCreated, "Create", "Created CAPI Cluster %s", capi.Name)
	}
	hold := capiPaused(capi)
	if err := setMoveAnnotations(ctx, s, hold); err != nil {
		return err
	}
	if hold {
		s.pause = pausedByCAPI
		ctrl.LoggerFrom(ctx).Info("CAPI Cluster is paused by someone else; holding until it is unpaused")
	}
	return nil
}

// reconcileObjects applies the provider's other objects, in the order it gives them: the
// control plane's, then each worker node group's. It records an Event when the control plane
// moves to a new version and when a MachineDeployment is created.
func (r *Reconciler) reconcileObjects(ctx context.Context, s *scope) error {
	c := s.cluster
	objs, err := s.provider.desired(s)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		md, isMD := obj.(*clusterv1.MachineDeployment)
		created := isMD && s.machineDeployments[workerNodeGroupOf(md)] == nil
		if err := r.apply(ctx, c, obj); err != nil {
			return err
		}
		if isMD {
			s.machineDeployments[workerNodeGroupOf(md)] = md
		}
		if created {
			r.Recorder.Eventf(c, md, corev1.EventTypeNormal, eventCreated, "Create", "Created MachineDeployment %s with %d workers", md.Name, ptr.Deref(md.Spec.Replicas, 0))
		}
	}
	if previous := s.controlPlaneVersion; previous != "" && s.version != "" && !kubeversion.Equal(previous, s.version) {
		r.Recorder.Eventf(c, s.capiCluster, corev1.EventTypeNormal, eventUpgrading, "Upgrade",
			"Upgrading the control plane from %s to %s; workers follow once it runs %s", previous, s.version, s.version)
	}
	return nil
}

// pruneWorkers deletes what the provider says is obsolete: the objects of worker node groups
// the spec no longer has.
func (r *Reconciler) pruneWorkers(ctx context.Context, s *scope) error {
	c := s.cluster
	for _, obj := range s.provider.obsolete(s) {
		if !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		md, isMD := obj.(*clusterv1.MachineDeployment)
		if err := r.Client.Delete(ctx, obj); ctrlclient.IgnoreNotFound(err) != nil {
			r.Recorder.Eventf(c, obj, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Deleting %T %s: %v", obj, obj.GetName(), err)
			return fmt.Errorf("deleting %T %s of a removed worker node group: %w", obj, klog.KObj(obj), err)
		}
		if isMD {
			r.Recorder.Eventf(c, md, corev1.EventTypeNormal, eventDeleting, "Delete", "Deleting MachineDeployment %s: worker node group %q was removed", md.Name, workerNodeGroupOf(md))
		}
	}
	return nil
}

// obsoleteMachineDeployments are the MachineDeployments of worker node groups the spec no
// longer has.
func obsoleteMachineDeployments(s *scope) []ctrlclient.Object {
	var out []ctrlclient.Object
	for group, md := range s.machineDeployments {
		if !hasWorkerNodeGroup(s.cluster, group) {
			out = append(out, md)
		}
	}
	return out
}

func hasWorkerNodeGroup(c *flotillav1.Cluster, name string) bool {
	for _, g := range c.Spec.WorkerNodeGroups {
		if g.Name == name {
			return true
		}
	}
	return false
}

// reconcileDelete tears the cluster down: it deletes the CAPI Cluster, which deletes the
// workers and then the control plane, waits (through the watch on the CAPI Cluster) until it is
// gone, and then lets the Cluster go. The bootstrap Secret and the LocalMachineTemplates are
// owned by the Cluster and follow it through garbage collection. A Cluster that clusterctl move
// deletes after copying it elsewhere lets go at once: its CAPI objects live on over there.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	s.deleting = true
	if !controllerutil.ContainsFinalizer(c, flotillav1.ClusterFinalizer) {
		return ctrl.Result{}, nil
	}
	if _, moved := c.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		s.deletingForMove = true
		return objectpatch.RequeueOnConflict(r.removeFinalizer(ctx, s), objectpatch.ConflictRetry)
	}
	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if metav1.HasAnnotation(c.ObjectMeta, clusterv1.PausedAnnotation) {
		s.pause = pausedByAnnotation
		return ctrl.Result{}, nil
	}
	if capi := s.capiCluster; capi != nil {
		if capi.DeletionTimestamp.IsZero() {
			if s.preDeleteHooks = predelete.Hooks(c); len(s.preDeleteHooks) > 0 {
				// The components named wait for the API server to uninstall what they installed;
				// the removal of their annotations brings the Cluster back.
				return ctrl.Result{}, r.markTeardown(ctx, capi)
			}
			if err := r.Client.Delete(ctx, capi); ctrlclient.IgnoreNotFound(err) != nil {
				r.Recorder.Eventf(c, capi, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Deleting CAPI Cluster %s: %v", capi.Name, err)
				return ctrl.Result{}, fmt.Errorf("deleting CAPI Cluster %s: %w", klog.KObj(capi), err)
			}
			r.Recorder.Eventf(c, capi, corev1.EventTypeNormal, eventDeleting, "Delete", "Deleting CAPI Cluster %s with its machines and control plane", capi.Name)
		}
		return ctrl.Result{}, nil
	}
	if err := r.removeFinalizer(ctx, s); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, eventDeleted, "Delete", "Deleted: the CAPI Cluster %s is gone", c.Name)
	return ctrl.Result{}, nil
}

// markTeardown sets the teardown annotation on the CAPI Cluster, for those who install into CAPI
// Clusters to let it go.
func (r *Reconciler) markTeardown(ctx context.Context, capi *clusterv1.Cluster) error {
	if metav1.HasAnnotation(capi.ObjectMeta, flotillav1.TeardownAnnotation) {
		return nil
	}
	p := objectpatch.New(r.Client, capi)
	metav1.SetMetaDataAnnotation(&capi.ObjectMeta, flotillav1.TeardownAnnotation, "")
	if err := p.Write(ctx); err != nil {
		return fmt.Errorf("marking CAPI Cluster %s for teardown: %w", klog.KObj(capi), err)
	}
	return nil
}

// removeFinalizer lets the Cluster go.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	if err := s.patch.RemoveFinalizer(ctx, flotillav1.ClusterFinalizer); err != nil {
		return err
	}
	s.gone = true
	return nil
}

// get reads key into obj from the cache; found is false when it does not exist.
func (r *Reconciler) get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object) (found bool, err error) {
	if err := r.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return true, nil
}
