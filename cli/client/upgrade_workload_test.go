package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/workflow"
)

func clusterWithGroups(groups ...flotillav1.WorkerNodeGroup) *flotillav1.Cluster {
	return &flotillav1.Cluster{Spec: flotillav1.ClusterSpec{KubernetesVersion: "1.35", WorkerNodeGroups: groups}}
}

func group(name string, count int32) flotillav1.WorkerNodeGroup {
	return flotillav1.WorkerNodeGroup{Name: name, Count: count}
}

func TestWorkerChanges(t *testing.T) {
	tests := []struct {
		name             string
		current, desired *flotillav1.Cluster
		want             []workerChange
	}{
		{
			name:    "unchanged counts are no change",
			current: clusterWithGroups(group("md-0", 3)), desired: clusterWithGroups(group("md-0", 3)),
		},
		{
			name:    "a scale down and a scale up are listed in the spec's order",
			current: clusterWithGroups(group("a", 3), group("b", 1)), desired: clusterWithGroups(group("b", 4), group("a", 2)),
			want: []workerChange{{Group: "b", From: 1, To: 4}, {Group: "a", From: 3, To: 2}},
		},
		{
			name:    "a new group is added and a missing one removed, removed ones last",
			current: clusterWithGroups(group("old", 2), group("md-0", 1)), desired: clusterWithGroups(group("new", 2), group("md-0", 1)),
			want: []workerChange{{Group: "new", To: 2, Added: true}, {Group: "old", From: 2, Removed: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(workerChanges(tt.current, tt.desired)).To(Equal(tt.want))
		})
	}
}

func TestUpgradePlanDescribe(t *testing.T) {
	tests := []struct {
		name string
		plan upgradePlan
		want []string
	}{
		{
			name: "a plan without changes says there is nothing to change",
			plan: upgradePlan{Name: "w1", FromMinor: "1.35", ToMinor: "1.35"},
			want: []string{"the spec changes nothing: w1 stays at Kubernetes 1.35 with the same workers"},
		},
		{
			name: "a version change says the control plane goes first, then the workers one at a time",
			plan: upgradePlan{Name: "w1", FromMinor: "1.35", ToMinor: "1.36", Version: "v1.36.3",
				Workers: []workerChange{{Group: "md-0", From: 2, To: 3}}, Changes: []string{"changes Cluster w1"}},
			want: []string{
				"Kubernetes 1.35 → 1.36 (v1.36.3): the control plane restarts on the new version, then workers are replaced one at a time",
				"worker node group md-0: 2 → 3 workers",
				"changes Cluster w1",
			},
		},
		{
			name: "new and removed groups are named as such",
			plan: upgradePlan{Name: "w1", FromMinor: "1.36", ToMinor: "1.36",
				Workers: []workerChange{{Group: "gpu", To: 2, Added: true}, {Group: "md-1", From: 4, Removed: true}},
				Changes: []string{"creates LocalMachineConfig w1-gpu", "changes Cluster w1"}},
			want: []string{
				"worker node group gpu: new, 2 workers",
				"worker node group md-1: removed with its 4 workers",
				"creates LocalMachineConfig w1-gpu, changes Cluster w1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.plan.describe()).To(Equal(tt.want))
		})
	}
}

// rolloutObjects are the objects newRolloutStatus judges, built for a cluster that asks for
// three workers at v1.36.3 and has rolled that out; tests break one thing at a time.
type rolloutObjects struct {
	cluster  *flotillav1.Cluster
	lcp      *controlplanev1.LocalControlPlane
	machines []clusterv1.Machine
}

func rolledOut() rolloutObjects {
	fc := clusterWithGroups(group("md-0", 3))
	fc.Name, fc.Generation = "w1", 4
	fc.Status.ObservedGeneration = 4
	fc.Status.KubernetesVersion = "v1.36.3"
	fc.Status.Conditions = []metav1.Condition{
		{Type: flotillav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: flotillav1.ReadyReason, ObservedGeneration: 4},
		{Type: flotillav1.ControlPlaneReadyCondition, Status: metav1.ConditionTrue, Reason: flotillav1.ReadyReason, ObservedGeneration: 4},
	}
	lcp := &controlplanev1.LocalControlPlane{}
	lcp.Status.Version = "v1.36.3"
	lcp.Status.Conditions = []metav1.Condition{{Type: controlplanev1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"}}
	// A control plane Machine (a Packet or ClusterClass cluster's) is the control plane's, not a
	// worker.
	cp := clusterv1.Machine{Spec: clusterv1.MachineSpec{Version: "v1.35.4"}}
	cp.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	machines := []clusterv1.Machine{cp}
	for range 3 {
		m := clusterv1.Machine{Spec: clusterv1.MachineSpec{Version: "v1.36.3"}}
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineReadyCondition, Status: metav1.ConditionTrue, Reason: "Ready"}}
		machines = append(machines, m)
	}
	return rolloutObjects{cluster: fc, lcp: lcp, machines: machines}
}

func (o rolloutObjects) status() rolloutStatus {
	return newRolloutStatus("v1.36.3", o.cluster, o.lcp, o.machines)
}

func TestRolloutStatus(t *testing.T) {
	tests := []struct {
		name        string
		change      func(o *rolloutObjects)
		wantDone    bool
		wantFailure string
		wantSummary string
	}{
		{
			name:        "a rolled-out cluster is done",
			change:      func(*rolloutObjects) {},
			wantDone:    true,
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 3 at v1.36.3, 3 ready · Ready",
		},
		{
			name:        "a control plane that still reports the old version is not done",
			change:      func(o *rolloutObjects) { o.cluster.Status.KubernetesVersion = "v1.35.4" },
			wantSummary: "control plane v1.35.4 → v1.36.3 · workers: 3 machines, 3 at v1.36.3, 3 ready · Ready",
		},
		{
			name: "a control plane that is not available is not done",
			change: func(o *rolloutObjects) {
				o.cluster.Status.Conditions[1].Status, o.cluster.Status.Conditions[1].Reason = metav1.ConditionFalse, flotillav1.WaitingForControlPlaneReason
			},
			wantSummary: "control plane v1.36.3 (not available: WaitingForControlPlane) · workers: 3 machines, 3 at v1.36.3, 3 ready · Ready",
		},
		{
			name: "a machine at the old version is not done",
			change: func(o *rolloutObjects) {
				o.machines[1].Spec.Version = "v1.35.4"
			},
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 2 at v1.36.3, 3 ready · Ready",
		},
		{
			name: "a machine still being deleted is not done",
			change: func(o *rolloutObjects) {
				old := clusterv1.Machine{Spec: clusterv1.MachineSpec{Version: "v1.35.4"}}
				old.DeletionTimestamp = ptr.To(metav1.NewTime(time.Now()))
				o.machines = append(o.machines, old)
			},
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 3 at v1.36.3, 3 ready, 1 deleting · Ready",
		},
		{
			name:        "a machine too many (the surge) is not done",
			change:      func(o *rolloutObjects) { o.machines = append(o.machines, o.machines[1]) },
			wantSummary: "control plane v1.36.3 · workers: 4 machines (want 3), 4 at v1.36.3, 4 ready · Ready",
		},
		{
			name: "a machine that is not Ready is not done",
			change: func(o *rolloutObjects) {
				o.machines[3].Status.Conditions[0].Status = metav1.ConditionFalse
			},
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 3 at v1.36.3, 2 ready · Ready",
		},
		{
			name:        "a Cluster whose controller has not seen the new generation is not done, even if it was Ready",
			change:      func(o *rolloutObjects) { o.cluster.Generation = 5 },
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 3 at v1.36.3, 3 ready · not Ready (Ready)",
		},
		{
			name: "an invalid spec fails the wait with the controller's message",
			change: func(o *rolloutObjects) {
				o.cluster.Status.Conditions[0] = metav1.Condition{Type: flotillav1.ReadyCondition, Status: metav1.ConditionFalse,
					Reason: flotillav1.InvalidSpecReason, Message: "spec.datacenterRef.name: Not found: \"dc\"", ObservedGeneration: 4}
			},
			wantFailure: `the cluster controller finds the spec invalid: spec.datacenterRef.name: Not found: "dc"`,
			wantSummary: "control plane v1.36.3 · workers: 3 machines, 3 at v1.36.3, 3 ready · not Ready (InvalidSpec)",
		},
		{
			name: "missing binaries fail the wait with the instruction to build them",
			change: func(o *rolloutObjects) {
				o.cluster.Status.KubernetesVersion = "v1.35.4"
				o.cluster.Status.Conditions[1] = metav1.Condition{Type: flotillav1.ControlPlaneReadyCondition, Status: metav1.ConditionFalse,
					Reason: flotillav1.WaitingForControlPlaneReason, Message: "LocalControlPlane w1 is not available (BinariesMissing: ...)"}
				o.lcp.Status.Conditions[0] = metav1.Condition{Type: controlplanev1.AvailableCondition, Status: metav1.ConditionFalse,
					Reason: controlplanev1.BinariesMissingReason, Message: "run: flotilla binaries build v1.36.3"}
			},
			wantFailure: "the control plane cannot start v1.36.3: run: flotilla binaries build v1.36.3",
			wantSummary: "control plane v1.35.4 → v1.36.3 (not available: WaitingForControlPlane) · workers: 3 machines, 3 at v1.36.3, 3 ready · Ready",
		},
		{
			name:        "a control plane that reports no version yet is starting",
			change:      func(o *rolloutObjects) { o.cluster.Status.KubernetesVersion = "" },
			wantSummary: "control plane starting · workers: 3 machines, 3 at v1.36.3, 3 ready · Ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := rolledOut()
			tt.change(&o)
			st := o.status()
			g.Expect(st.done()).To(Equal(tt.wantDone))
			g.Expect(st.summary()).To(Equal(tt.wantSummary))
			if tt.wantFailure == "" {
				g.Expect(st.failure()).To(Succeed())
			} else {
				g.Expect(st.failure()).To(MatchError(tt.wantFailure))
			}
		})
	}
}

func TestUpgradeSkips(t *testing.T) {
	t.Run("an empty plan skips the phases that change something", func(t *testing.T) {
		g := NewWithT(t)
		skip, reason := skipNothingToChange(context.Background(), &upgradeRun{Plan: &upgradePlan{}})
		g.Expect(skip).To(BeTrue())
		g.Expect(reason).To(Equal("nothing to change"))
	})
	t.Run("a plan with changes, or none yet, skips nothing", func(t *testing.T) {
		g := NewWithT(t)
		skip, _ := skipNothingToChange(context.Background(), &upgradeRun{Plan: &upgradePlan{Changes: []string{"changes Cluster w1"}}})
		g.Expect(skip).To(BeFalse())
		skip, _ = skipNothingToChange(context.Background(), &upgradeRun{})
		g.Expect(skip).To(BeFalse())
	})
	t.Run("ResumeReconcile runs once a pause may be on the cluster", func(t *testing.T) {
		g := NewWithT(t)
		skip, reason := skipNotPaused(context.Background(), &upgradeRun{})
		g.Expect(skip).To(BeTrue())
		g.Expect(reason).To(Equal("reconciliation was not paused"))
		skip, _ = skipNotPaused(context.Background(), &upgradeRun{MayBePaused: true})
		g.Expect(skip).To(BeFalse())
	})
}

func TestUpgradeWorkflow(t *testing.T) {
	t.Run("has the contract's phases in order, and ResumeReconcile always runs", func(t *testing.T) {
		g := NewWithT(t)
		var names []string
		for _, p := range upgradeWorkflow.Phases {
			names = append(names, p.Name)
			g.Expect(p.Always).To(Equal(p.Name == "ResumeReconcile"), p.Name)
		}
		g.Expect(names).To(Equal([]string{"SetupAndValidate", "PauseReconcile", "UpgradeWorkloadCluster", "UpdateClusterAndGitResources", "ResumeReconcile"}))
	})
	t.Run("the plan and the pause survive a checkpoint", func(t *testing.T) {
		g := NewWithT(t)
		path := filepath.Join(t.TempDir(), ".upgrade-checkpoint.json")
		r := &upgradeRun{Plan: &upgradePlan{Name: "w1", Management: "mgmt", Version: "v1.36.3", Changes: []string{"changes Cluster w1"}}}
		wf := &workflow.Workflow[upgradeRun]{Name: upgradeWorkflow.Name, Phases: []workflow.Phase[upgradeRun]{
			{Name: "Pause", Run: func(_ context.Context, r *upgradeRun) error { r.MayBePaused = true; return nil }},
			{Name: "Fail", Run: func(context.Context, *upgradeRun) error { return errors.New("interrupted") }},
		}}
		g.Expect(wf.Run(context.Background(), r, workflow.Options{CheckpointPath: path})).NotTo(Succeed())

		resumed := &upgradeRun{}
		g.Expect(wf.Run(context.Background(), resumed, workflow.Options{CheckpointPath: path})).NotTo(Succeed())
		g.Expect(resumed.MayBePaused).To(BeTrue())
		g.Expect(resumed.Plan).To(Equal(r.Plan))
	})
}

func TestForgetValidationCheckpoint(t *testing.T) {
	tests := []struct {
		name          string
		phase         string
		wantRemaining bool
	}{
		{name: "a failed validation leaves no checkpoint: nothing was done", phase: phaseSetupAndValidate},
		{name: "a later failure keeps its checkpoint to resume from", phase: phaseUpgradeWorkloadCluster, wantRemaining: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), ".upgrade-checkpoint.json")
			g.Expect(os.WriteFile(path, []byte("{}"), 0o600)).To(Succeed())
			err := forgetValidationCheckpoint(&workflow.PhaseError{Phase: tt.phase, Err: errors.New("boom"), CheckpointPath: path})
			g.Expect(err).To(MatchError(ContainSubstring("boom")))
			if tt.wantRemaining {
				g.Expect(path).To(BeAnExistingFile())
				g.Expect(err.Error()).To(ContainSubstring("Progress is saved in " + path))
			} else {
				g.Expect(path).NotTo(BeAnExistingFile())
				g.Expect(err.Error()).NotTo(ContainSubstring("Progress is saved"))
			}
		})
	}
}
