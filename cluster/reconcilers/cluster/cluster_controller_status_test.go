package cluster

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
)

func lcpWith(available metav1.ConditionStatus, version string) *controlplanev1.LocalControlPlane {
	lcp := &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}
	lcp.Spec.ControlPlaneEndpoint = controlplanev1.APIEndpoint{Host: "127.0.0.1", Port: 40001}
	lcp.Status.Version = version
	if available != "" {
		lcp.Status.Conditions = []metav1.Condition{{
			Type: controlplanev1.AvailableCondition, Status: available, Reason: "Starting", Message: "kube-apiserver is not ready"}}
	}
	return lcp
}

func mdWith(generation, observed int64, version string, replicas, ready, upToDate int32) *clusterv1.MachineDeployment {
	md := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "w1-md-0", Generation: generation}}
	md.Spec.Template.Spec.Version = version
	md.Status.ObservedGeneration = observed
	md.Status.Replicas = ptr.To(replicas)
	md.Status.ReadyReplicas = ptr.To(ready)
	md.Status.UpToDateReplicas = ptr.To(upToDate)
	return md
}

func condition(g Gomega, c *flotillav1.Cluster, t string) metav1.Condition {
	cond := meta.FindStatusCondition(c.Status.Conditions, t)
	g.Expect(cond).NotTo(BeNil(), "condition %s", t)
	g.Expect(cond.ObservedGeneration).To(Equal(c.Generation))
	g.Expect(cond.Message).NotTo(BeEmpty(), "every condition says why")
	return *cond
}

func TestSetControlPlaneReady(t *testing.T) {
	tests := []struct {
		name        string
		lcp         *controlplanev1.LocalControlPlane
		invalid     field.ErrorList
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name: "a missing control plane is waited for", lcp: nil,
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "LocalControlPlane w1 does not exist yet",
		},
		{
			name: "a control plane without an Available condition is waited for", lcp: lcpWith("", ""),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "waiting for LocalControlPlane w1 to report Available",
		},
		{
			name: "an unavailable control plane passes on why", lcp: lcpWith(metav1.ConditionFalse, ""),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason,
			wantMessage: "LocalControlPlane w1 is not available (Starting: kube-apiserver is not ready)",
		},
		{
			name: "an available control plane on the old version is upgrading", lcp: lcpWith(metav1.ConditionTrue, "v1.35.4"),
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason,
			wantMessage: "control plane runs v1.35.4, upgrading to v1.36.3",
		},
		{
			name: "an available control plane on the requested version is ready", lcp: lcpWith(metav1.ConditionTrue, "v1.36.3"),
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason,
			wantMessage: "control plane v1.36.3 is available at 127.0.0.1:40001",
		},
		{
			name: "an invalid spec names the field", lcp: lcpWith(metav1.ConditionTrue, "v1.36.3"),
			invalid:    field.ErrorList{field.NotFound(field.NewPath("spec", "datacenterRef", "name"), "gone")},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.InvalidSpecReason,
			wantMessage: `spec.datacenterRef.name: Not found: "gone"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			setControlPlaneReady(c, "v1.36.3", tt.lcp, tt.invalid)
			cond := condition(g, c, flotillav1.ControlPlaneReadyCondition)
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(Equal(tt.wantMessage))
		})
	}
}

func TestSetWorkersReady(t *testing.T) {
	twoGroups := func(c *flotillav1.Cluster) {
		c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{Name: "md-1", Count: 1})
	}
	tests := []struct {
		name        string
		spec        func(*flotillav1.Cluster)
		mds         map[string]*clusterv1.MachineDeployment
		invalid     field.ErrorList
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantWorkers flotillav1.WorkerStatus
	}{
		{
			name:       "a cluster without worker node groups has its workers ready",
			spec:       func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups = nil },
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason, wantMessage: "no worker node groups",
		},
		{
			name:       "a group whose MachineDeployment does not exist yet is waited for",
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason,
			wantMessage: "0 of 2 workers ready; md-0: MachineDeployment w1-md-0 does not exist yet",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2},
		},
		{
			name:       "a group with all machines ready and up to date is ready",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(1, 1, "v1.36.3", 2, 2, 2)},
			wantStatus: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason, wantMessage: "2 of 2 workers ready",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 2},
		},
		{
			name:       "a group still creating machines is waited for",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(1, 1, "v1.36.3", 2, 1, 2)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason,
			wantMessage: "1 of 2 workers ready; md-0: 1 of 2 ready",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 1},
		},
		{
			name:       "a group scaling down is waited for until the surplus machines are gone",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(2, 2, "v1.36.3", 3, 3, 3)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason,
			wantMessage: "2 of 2 workers ready; md-0: scaling down from 3 to 2 machines",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 2},
		},
		{
			name:       "a MachineDeployment that has not observed its latest spec is not trusted yet",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(2, 1, "v1.36.3", 2, 2, 2)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason,
			wantMessage: "2 of 2 workers ready; md-0: 2 of 2 ready, waiting for the MachineDeployment controller",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 2},
		},
		{
			name:       "a group rolling to a new version is upgrading",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(2, 2, "v1.36.3", 3, 3, 1)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason,
			wantMessage: "2 of 2 workers ready; md-0: rolling out: 1 of 3 machines up to date, 3 ready",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 2},
		},
		{
			name:       "a group waiting for the control plane before upgrading is upgrading",
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(1, 1, "v1.35.4", 2, 2, 2)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason,
			wantMessage: "2 of 2 workers ready; md-0: 2 of 2 ready, waiting for the control plane before upgrading to v1.36.3",
			wantWorkers: flotillav1.WorkerStatus{Desired: 2, Ready: 2},
		},
		{
			name:       "workers of every group are counted",
			spec:       twoGroups,
			mds:        map[string]*clusterv1.MachineDeployment{"md-0": mdWith(1, 1, "v1.36.3", 2, 2, 2)},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason,
			wantMessage: "2 of 3 workers ready; md-1: MachineDeployment w1-md-1 does not exist yet",
			wantWorkers: flotillav1.WorkerStatus{Desired: 3, Ready: 2},
		},
		{
			name: "an invalid machineGroupRef names the field",
			invalid: field.ErrorList{field.NotSupported(
				field.NewPath("spec", "workerNodeGroups").Index(0).Child("machineGroupRef", "kind"), "Nope", []string{"LocalMachineConfig"})},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.InvalidSpecReason,
			wantMessage: `spec.workerNodeGroups[0].machineGroupRef.kind: Unsupported value: "Nope": supported values: "LocalMachineConfig"`,
			wantWorkers: flotillav1.WorkerStatus{Desired: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			if tt.spec != nil {
				tt.spec(c)
			}
			setWorkersReady(c, "v1.36.3", nil, tt.mds, tt.invalid)
			cond := condition(g, c, flotillav1.WorkersReadyCondition)
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(Equal(tt.wantMessage))
			g.Expect(c.Status.Workers).To(Equal(tt.wantWorkers))
		})
	}
}

func TestSetStatus(t *testing.T) {
	readyCP := lcpWith(metav1.ConditionTrue, "v1.36.3")
	readyMDs := map[string]*clusterv1.MachineDeployment{"md-0": mdWith(1, 1, "v1.36.3", 2, 2, 2)}
	tests := []struct {
		name                 string
		scope                scope
		wantReady            metav1.ConditionStatus
		wantReason           string
		wantPhase            string
		wantPaused           metav1.ConditionStatus
		wantObservedGenerate bool
	}{
		{
			name:      "a cluster whose control plane and workers are ready is Ready",
			scope:     scope{provider: &localProvider{controlPlane: readyCP}, machineDeployments: readyMDs},
			wantReady: metav1.ConditionTrue, wantReason: flotillav1.ReadyReason, wantPhase: flotillav1.ClusterPhaseReady,
			wantPaused: metav1.ConditionFalse, wantObservedGenerate: true,
		},
		{
			name:      "a cluster waiting for its control plane is provisioning",
			scope:     scope{provider: &localProvider{}},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.WaitingForControlPlaneReason, wantPhase: flotillav1.ClusterPhaseProvisioning,
			wantPaused: metav1.ConditionFalse, wantObservedGenerate: true,
		},
		{
			name:      "a cluster whose control plane is on the old version is upgrading",
			scope:     scope{provider: &localProvider{controlPlane: lcpWith(metav1.ConditionTrue, "v1.35.4")}, machineDeployments: readyMDs},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.UpgradingReason, wantPhase: flotillav1.ClusterPhaseUpgrading,
			wantPaused: metav1.ConditionFalse, wantObservedGenerate: true,
		},
		{
			name:      "a cluster whose workers lag is waiting for them",
			scope:     scope{provider: &localProvider{controlPlane: readyCP}},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.WaitingForWorkersReason, wantPhase: flotillav1.ClusterPhaseProvisioning,
			wantPaused: metav1.ConditionFalse, wantObservedGenerate: true,
		},
		{
			name: "a cluster with an invalid spec has failed",
			scope: scope{provider: &localProvider{controlPlane: readyCP}, machineDeployments: readyMDs, invalid: field.ErrorList{
				field.NotFound(field.NewPath("spec", "workerNodeGroups").Index(0).Child("machineGroupRef", "name"), "nope")}},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.InvalidSpecReason, wantPhase: flotillav1.ClusterPhaseFailed,
			wantPaused: metav1.ConditionFalse, wantObservedGenerate: true,
		},
		{
			name:      "a paused cluster says so and does not claim to have observed its spec",
			scope:     scope{pause: pausedByAnnotation, provider: &localProvider{controlPlane: readyCP}, machineDeployments: readyMDs},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.PausedReason, wantPhase: flotillav1.ClusterPhasePaused,
			wantPaused: metav1.ConditionTrue,
		},
		{
			name:      "a cluster held while its CAPI Cluster is paused for a move says so",
			scope:     scope{pause: pausedByCAPI, provider: &localProvider{controlPlane: readyCP}, machineDeployments: readyMDs},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.PausedReason, wantPhase: flotillav1.ClusterPhasePaused,
			wantPaused: metav1.ConditionTrue,
		},
		{
			name:      "a cluster being deleted is Deleting",
			scope:     scope{deleting: true, provider: &localProvider{controlPlane: readyCP}, machineDeployments: readyMDs},
			wantReady: metav1.ConditionFalse, wantReason: flotillav1.DeletingReason, wantPhase: flotillav1.ClusterPhaseDeleting,
			wantPaused: metav1.ConditionFalse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.scope
			s.cluster = testCluster()
			s.version = "v1.36.3"
			setStatus(&s)
			c := s.cluster
			ready := condition(g, c, flotillav1.ReadyCondition)
			g.Expect(ready.Status).To(Equal(tt.wantReady))
			g.Expect(ready.Reason).To(Equal(tt.wantReason))
			g.Expect(condition(g, c, flotillav1.PausedCondition).Status).To(Equal(tt.wantPaused))
			condition(g, c, flotillav1.ControlPlaneReadyCondition)
			condition(g, c, flotillav1.WorkersReadyCondition)
			g.Expect(c.Status.Phase).To(Equal(tt.wantPhase))
			if tt.wantObservedGenerate {
				g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			} else {
				g.Expect(c.Status.ObservedGeneration).To(BeZero())
			}
			if lcp := s.provider.(*localProvider).controlPlane; lcp != nil {
				g.Expect(c.Status.KubernetesVersion).To(Equal(lcp.Status.Version))
			}
		})
	}
}
