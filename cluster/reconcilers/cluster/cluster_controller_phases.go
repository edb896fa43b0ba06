package cluster

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/predelete"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
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

// observe reads the objects Flotilla created for the Cluster from the cache into the scope.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	c := s.cluster
	key := ctrlclient.ObjectKeyFromObject(c)

	capi := &clusterv1.Cluster{}
	if found, err := r.get(ctx, key, capi); err != nil {
		return err
	} else if found {
		s.capiCluster = capi
	}
	lcp := &controlplanev1.LocalControlPlane{}
	if found, err := r.get(ctx, key, lcp); err != nil {
		return err
	} else if found {
		s.controlPlane = lcp
	}

	if isPacket(c) {
		if err := r.observePacket(ctx, s); err != nil { // packet.go
			return err
		}
	}

	owned := []ctrlclient.ListOption{ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{flotillav1.ClusterNameLabel: c.Name}}
	mds := &clusterv1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, owned...); err != nil {
		return fmt.Errorf("listing MachineDeployments of Cluster %s: %w", klog.KObj(c), err)
	}
	s.machineDeployments = map[string]*clusterv1.MachineDeployment{}
	for i := range mds.Items {
		if group := mds.Items[i].Labels[flotillav1.WorkerNodeGroupLabel]; group != "" {
			s.machineDeployments[group] = &mds.Items[i]
		}
	}
	lmts := &infrav1.LocalMachineTemplateList{}
	if err := r.Client.List(ctx, lmts, owned...); err != nil {
		return fmt.Errorf("listing LocalMachineTemplates of Cluster %s: %w", klog.KObj(c), err)
	}
	s.machineTemplates = map[string]*infrav1.LocalMachineTemplate{}
	for i := range lmts.Items {
		if group := lmts.Items[i].Labels[flotillav1.WorkerNodeGroupLabel]; group != "" {
			s.machineTemplates[group] = &lmts.Items[i]
		}
	}
	return nil
}

// resolveInputs checks the spec against the world: the Kubernetes version is supported, and
// every reference names an object of a known kind that exists. What it finds wrong goes to
// s.invalid, each error naming its field; only failures to read are returned.
func (r *Reconciler) resolveInputs(ctx context.Context, s *scope) error {
	c := s.cluster
	spec := field.NewPath("spec")
	var errs field.ErrorList

	if _, err := r.ResolveVersion(c.Spec.KubernetesVersion); err != nil {
		errs = append(errs, field.Invalid(spec.Child("kubernetesVersion"), c.Spec.KubernetesVersion, err.Error()))
	}

	if isPacket(c) { // packet.go
		err := r.resolvePacketInputs(ctx, s, &errs)
		s.groupVersions = map[string]string{}
		s.invalid = errs
		return err
	}
	dcPath := spec.Child("datacenterRef")
	if c.Spec.DatacenterRef.Kind != flotillav1.LocalDatacenterConfigKind {
		errs = append(errs, field.NotSupported(dcPath.Child("kind"), c.Spec.DatacenterRef.Kind, []string{flotillav1.LocalDatacenterConfigKind}))
	} else {
		dc := &infrav1.LocalDatacenterConfig{}
		err := r.getRef(ctx, c, dcPath, c.Spec.DatacenterRef, dc, &errs)
		if err != nil {
			return err
		}
		s.datacenter = dc
	}

	if ref := c.Spec.ControlPlane.MachineGroupRef; ref != nil {
		if _, err := r.machineConfig(ctx, c, spec.Child("controlPlane", "machineGroupRef"), *ref, &errs); err != nil {
			return err
		}
	}

	s.machineConfigs = map[string]*infrav1.LocalMachineConfig{}
	s.groupVersions = map[string]string{}
	for i, group := range c.Spec.WorkerNodeGroups {
		path := spec.Child("workerNodeGroups").Index(i)
		mc, err := r.machineConfig(ctx, c, path.Child("machineGroupRef"), group.MachineGroupRef, &errs)
		if err != nil {
			return err
		}
		s.machineConfigs[group.Name] = mc
		if group.KubernetesVersion != "" {
			v, err := r.ResolveVersion(group.KubernetesVersion)
			if err != nil {
				errs = append(errs, field.Invalid(path.Child("kubernetesVersion"), group.KubernetesVersion, err.Error()))
				continue
			}
			s.groupVersions[group.Name] = v
		}
	}
	s.invalid = errs
	return nil
}

// machineConfig returns the LocalMachineConfig ref names, or nil with an error in errs
// when the kind is not LocalMachineConfig or the object does not exist.
func (r *Reconciler) machineConfig(ctx context.Context, c *flotillav1.Cluster, path *field.Path, ref flotillav1.Ref, errs *field.ErrorList) (*infrav1.LocalMachineConfig, error) {
	if ref.Kind != flotillav1.LocalMachineConfigKind {
		*errs = append(*errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{flotillav1.LocalMachineConfigKind}))
		return nil, nil
	}
	mc := &infrav1.LocalMachineConfig{}
	before := len(*errs)
	if err := r.getRef(ctx, c, path, ref, mc, errs); err != nil || len(*errs) > before {
		return nil, err
	}
	return mc, nil
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
	capi := desiredCAPICluster(c, false)
	if isPacket(c) { // packet.go; from the spec alone, as the rest of the CAPI Cluster
		capi.Spec.InfrastructureRef, capi.Spec.ControlPlaneRef = clusterspec.InfrastructureRef(c.Name), clusterspec.ControlPlaneRef(c.Name)
	}
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

// reconcileControlPlane applies the bootstrap Secret, the LocalCluster and the
// LocalControlPlane.
func (r *Reconciler) reconcileControlPlane(ctx context.Context, s *scope) error {
	if s.packet != nil {
		return r.reconcilePacketControlPlane(ctx, s) // packet.go
	}
	c := s.cluster
	for _, obj := range []ctrlclient.Object{desiredBootstrapSecret(c), desiredLocalCluster(c)} {
		if err := r.apply(ctx, c, obj); err != nil {
			return err
		}
	}
	previous := ""
	if s.controlPlane != nil {
		previous = s.controlPlane.Spec.Version
	}
	lcp := desiredControlPlane(c, s.version, s.datacenter)
	if err := r.apply(ctx, c, lcp); err != nil {
		return err
	}
	s.controlPlane = lcp
	if previous != "" && previous != lcp.Spec.Version {
		r.Recorder.Eventf(c, lcp, corev1.EventTypeNormal, eventUpgrading, "Upgrade",
			"Upgrading the control plane from %s to %s; workers follow once it runs %s", previous, lcp.Spec.Version, lcp.Spec.Version)
	}
	return nil
}

// reconcileWorkers applies the LocalMachineTemplate and MachineDeployment of every worker node
// group.
func (r *Reconciler) reconcileWorkers(ctx context.Context, s *scope) error {
	if s.packet != nil {
		return r.reconcilePacketWorkers(ctx, s) // packet.go
	}
	c := s.cluster
	for _, group := range c.Spec.WorkerNodeGroups {
		if err := r.apply(ctx, c, desiredMachineTemplate(c, group, s.machineConfigs[group.Name])); err != nil {
			return err
		}
		current := s.machineDeployments[group.Name]
		desired := cmp.Or(s.groupVersions[group.Name], s.version)
		md := desiredMachineDeployment(c, group, workerVersion(desired, s.controlPlane, current))
		if err := r.apply(ctx, c, md); err != nil {
			return err
		}
		s.machineDeployments[group.Name] = md
		if current == nil {
			r.Recorder.Eventf(c, md, corev1.EventTypeNormal, eventCreated, "Create", "Created MachineDeployment %s with %d workers", md.Name, group.Count)
		}
	}
	return nil
}

// pruneWorkers deletes the MachineDeployments of worker node groups the spec no longer has, and
// their LocalMachineTemplates once the MachineDeployment (and so every Machine) is gone.
func (r *Reconciler) pruneWorkers(ctx context.Context, s *scope) error {
	c := s.cluster
	wanted := map[string]bool{}
	for _, group := range c.Spec.WorkerNodeGroups {
		wanted[group.Name] = true
	}
	for group, md := range s.machineDeployments {
		if wanted[group] || !md.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, md); ctrlclient.IgnoreNotFound(err) != nil {
			r.Recorder.Eventf(c, md, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Deleting MachineDeployment %s: %v", md.Name, err)
			return fmt.Errorf("deleting MachineDeployment %s of removed worker node group %q: %w", klog.KObj(md), group, err)
		}
		r.Recorder.Eventf(c, md, corev1.EventTypeNormal, eventDeleting, "Delete", "Deleting MachineDeployment %s: worker node group %q was removed", md.Name, group)
	}
	for group, lmt := range s.machineTemplates {
		if wanted[group] || s.machineDeployments[group] != nil {
			continue
		}
		if err := r.Client.Delete(ctx, lmt); ctrlclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting LocalMachineTemplate %s of removed worker node group %q: %w", klog.KObj(lmt), group, err)
		}
	}
	return nil
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
