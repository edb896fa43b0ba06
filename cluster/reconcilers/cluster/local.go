package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
)

// localProvider is the local provider's part of the reconciler: a Cluster whose datacenterRef
// is a LocalDatacenterConfig becomes the objects infrastructure/local/clusterspec builds (a
// LocalCluster, a LocalControlPlane, and per worker node group a LocalMachineTemplate and a
// MachineDeployment).
type localProvider struct {
	r *Reconciler

	// datacenter is the LocalDatacenterConfig spec.datacenterRef names.
	datacenter *infrav1.LocalDatacenterConfig
	// machineConfigs are the LocalMachineConfigs of the worker node groups, by group name.
	machineConfigs map[string]*infrav1.LocalMachineConfig
	// controlPlane is the LocalControlPlane of the cluster; nil when absent.
	controlPlane *controlplanev1.LocalControlPlane
	// machineTemplates are the LocalMachineTemplates of the cluster, by worker node group.
	machineTemplates map[string]*infrav1.LocalMachineTemplate
}

// observe reads the LocalControlPlane and the LocalMachineTemplates.
func (p *localProvider) observe(ctx context.Context, s *scope) error {
	c := s.cluster
	lcp := &controlplanev1.LocalControlPlane{}
	if found, err := p.r.get(ctx, ctrlclient.ObjectKeyFromObject(c), lcp); err != nil {
		return err
	} else if found {
		p.controlPlane = lcp
		s.controlPlaneVersion = lcp.Spec.Version
	}
	lmts := &infrav1.LocalMachineTemplateList{}
	if err := p.r.Client.List(ctx, lmts, ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{flotillav1.ClusterNameLabel: c.Name}); err != nil {
		return fmt.Errorf("listing LocalMachineTemplates of Cluster %s: %w", klog.KObj(c), err)
	}
	p.machineTemplates = map[string]*infrav1.LocalMachineTemplate{}
	for i := range lmts.Items {
		if group := lmts.Items[i].Labels[flotillav1.WorkerNodeGroupLabel]; group != "" {
			p.machineTemplates[group] = &lmts.Items[i]
		}
	}
	return nil
}

// resolve reads the LocalDatacenterConfig and the LocalMachineConfigs the spec names.
func (p *localProvider) resolve(ctx context.Context, s *scope, errs *field.ErrorList) error {
	c := s.cluster
	spec := field.NewPath("spec")
	dcPath := spec.Child("datacenterRef")
	if c.Spec.DatacenterRef.Kind != localspec.DatacenterConfigKind {
		*errs = append(*errs, field.NotSupported(dcPath.Child("kind"), c.Spec.DatacenterRef.Kind, []string{localspec.DatacenterConfigKind}))
	} else {
		dc := &infrav1.LocalDatacenterConfig{}
		if err := p.r.getRef(ctx, c, dcPath, c.Spec.DatacenterRef, dc, errs); err != nil {
			return err
		}
		p.datacenter = dc
	}

	if ref := c.Spec.ControlPlane.MachineGroupRef; ref != nil {
		if _, err := p.machineConfig(ctx, c, spec.Child("controlPlane", "machineGroupRef"), *ref, errs); err != nil {
			return err
		}
	}
	p.machineConfigs = map[string]*infrav1.LocalMachineConfig{}
	for i, group := range c.Spec.WorkerNodeGroups {
		mc, err := p.machineConfig(ctx, c, spec.Child("workerNodeGroups").Index(i).Child("machineGroupRef"), group.MachineGroupRef, errs)
		if err != nil {
			return err
		}
		p.machineConfigs[group.Name] = mc
	}
	return nil
}

// machineConfig returns the LocalMachineConfig ref names, or nil with an error in errs when the
// kind is not LocalMachineConfig or the object does not exist.
func (p *localProvider) machineConfig(ctx context.Context, c *flotillav1.Cluster, path *field.Path, ref flotillav1.Ref, errs *field.ErrorList) (*infrav1.LocalMachineConfig, error) {
	if ref.Kind != localspec.MachineConfigKind {
		*errs = append(*errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{localspec.MachineConfigKind}))
		return nil, nil
	}
	mc := &infrav1.LocalMachineConfig{}
	before := len(*errs)
	if err := p.r.getRef(ctx, c, path, ref, mc, errs); err != nil || len(*errs) > before {
		return nil, err
	}
	return mc, nil
}

// completeCAPICluster points the CAPI Cluster at the LocalCluster and the LocalControlPlane.
func (p *localProvider) completeCAPICluster(s *scope, capi *clusterv1.Cluster) {
	capi.Spec.InfrastructureRef = localspec.InfrastructureRef(s.cluster.Name)
	capi.Spec.ControlPlaneRef = localspec.ControlPlaneRef(s.cluster.Name)
}

// desired: what localspec.Objects builds from the configs resolve read and the control plane
// and MachineDeployments observe and the scope read.
func (p *localProvider) desired(s *scope) ([]ctrlclient.Object, error) {
	return localspec.Objects(localspec.Input{
		Cluster: s.cluster, Version: s.version, GroupVersions: s.groupVersions,
		Datacenter: p.datacenter, MachineConfigs: p.machineConfigs,
		ControlPlane: p.controlPlane, MachineDeployments: s.machineDeployments,
	}), nil
}

// obsolete: the MachineDeployments of removed worker node groups, and their
// LocalMachineTemplates once the MachineDeployment (and so every Machine) is gone.
func (p *localProvider) obsolete(s *scope) []ctrlclient.Object {
	out := obsoleteMachineDeployments(s)
	for group, lmt := range p.machineTemplates {
		if !hasWorkerNodeGroup(s.cluster, group) && s.machineDeployments[group] == nil {
			out = append(out, lmt)
		}
	}
	return out
}

// setStatus: the version the LocalControlPlane runs, ControlPlaneReady from it, WorkersReady
// from the MachineDeployments.
func (p *localProvider) setStatus(s *scope) {
	c := s.cluster
	c.Status.KubernetesVersion = ""
	if p.controlPlane != nil {
		c.Status.KubernetesVersion = p.controlPlane.Status.Version
	}
	setControlPlaneReady(c, s.version, p.controlPlane, controlPlaneErrors(s.invalid))
	setWorkersReady(c, s.version, s.groupVersions, s.machineDeployments, workerErrors(s.invalid))
}
