package localcontrolplane

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

func TestSetStatus(t *testing.T) {
	running := &controlplane.Status{Processes: []controlplane.ProcessStatus{
		{Name: "etcd", PID: 10}, {Name: "kube-apiserver", PID: 11}, {Name: "kwok", PID: 12},
	}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "work"}}
	type want struct {
		initialized      bool
		version          string
		available        metav1.ConditionStatus
		availableReason  string
		processes        metav1.ConditionStatus
		processesReason  string
		certificates     metav1.ConditionStatus
		certificatesReas string
	}
	tests := []struct {
		name        string
		deleting    bool
		initialized bool
		scope       scope
		want        want
	}{
		{
			name:  "a control plane without a Cluster waits for one",
			scope: scope{},
			want: want{
				available: metav1.ConditionFalse, availableReason: controlplanev1.WaitingForClusterReason,
				processes: metav1.ConditionFalse, processesReason: controlplanev1.WaitingForClusterReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.WaitingForClusterReason,
			},
		},
		{
			name:  "missing binaries block everything and say so",
			scope: scope{cluster: cluster, binariesErr: errors.New("kube-apiserver is missing: run: flotilla binaries build v1.36.3")},
			want: want{
				available: metav1.ConditionFalse, availableReason: controlplanev1.BinariesMissingReason,
				processes: metav1.ConditionFalse, processesReason: controlplanev1.BinariesMissingReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.BinariesMissingReason,
			},
		},
		{
			name:  "a name conflict blocks everything",
			scope: scope{cluster: cluster, clusterName: "work", conflict: &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "work"}}},
			want: want{
				available: metav1.ConditionFalse, availableReason: controlplanev1.ClusterNameConflictReason,
				processes: metav1.ConditionFalse, processesReason: controlplanev1.ClusterNameConflictReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.ClusterNameConflictReason,
			},
		},
		{
			name:  "processes that fail to start say why",
			scope: scope{cluster: cluster, ensureErr: errors.New("etcd exited: port in use")},
			want: want{
				available: metav1.ConditionFalse, availableReason: controlplanev1.ProcessStartFailedReason,
				processes: metav1.ConditionFalse, processesReason: controlplanev1.ProcessStartFailedReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.ProcessStartFailedReason,
			},
		},
		{
			name:  "started processes whose API server is not ready yet are starting",
			scope: scope{cluster: cluster, clusterName: "work", processes: running, secretsWritten: true, readyErr: errors.New("connection refused")},
			want: want{
				available: metav1.ConditionFalse, availableReason: controlplanev1.StartingReason,
				processes: metav1.ConditionTrue, processesReason: controlplanev1.ProcessesRunningReason,
				certificates: metav1.ConditionTrue, certificatesReas: controlplanev1.CertificatesAvailableReason,
			},
		},
		{
			name:  "a ready API server makes the control plane available and initialized",
			scope: scope{cluster: cluster, clusterName: "work", processes: running, secretsWritten: true, ready: true, version: "v1.36.3"},
			want: want{
				initialized: true, version: "v1.36.3",
				available: metav1.ConditionTrue, availableReason: controlplanev1.AvailableReason,
				processes: metav1.ConditionTrue, processesReason: controlplanev1.ProcessesRunningReason,
				certificates: metav1.ConditionTrue, certificatesReas: controlplanev1.CertificatesAvailableReason,
			},
		},
		{
			name:        "an initialized control plane whose API server stops answering is unavailable and stays initialized",
			initialized: true,
			scope:       scope{cluster: cluster, clusterName: "work", processes: running, secretsWritten: true, readyErr: errors.New("connection refused"), restarted: []string{"kube-apiserver (pid 11)"}},
			want: want{
				initialized: true,
				available:   metav1.ConditionFalse, availableReason: controlplanev1.UnavailableReason,
				processes: metav1.ConditionTrue, processesReason: controlplanev1.ProcessesRunningReason,
				certificates: metav1.ConditionTrue, certificatesReas: controlplanev1.CertificatesAvailableReason,
			},
		},
		{
			name:  "Secrets that cannot be written make certificates unavailable only",
			scope: scope{cluster: cluster, clusterName: "work", processes: running, secretsErr: errors.New("forbidden"), ready: true, version: "v1.36.3"},
			want: want{
				initialized: true, version: "v1.36.3",
				available: metav1.ConditionTrue, availableReason: controlplanev1.AvailableReason,
				processes: metav1.ConditionTrue, processesReason: controlplanev1.ProcessesRunningReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.CertificatesUnavailableReason,
			},
		},
		{
			name:        "a deleting control plane says so",
			deleting:    true,
			initialized: true,
			scope:       scope{cluster: cluster, clusterName: "work"},
			want: want{
				initialized: true,
				available:   metav1.ConditionFalse, availableReason: controlplanev1.DeletingReason,
				processes: metav1.ConditionFalse, processesReason: controlplanev1.DeletingReason,
				certificates: metav1.ConditionFalse, certificatesReas: controlplanev1.DeletingReason,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lcp := &controlplanev1.LocalControlPlane{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work", Generation: 2},
				Spec: controlplanev1.LocalControlPlaneSpec{
					Version:              "v1.36.3",
					ControlPlaneEndpoint: controlplanev1.APIEndpoint{Host: "127.0.0.1", Port: 20123},
				},
			}
			if tt.deleting {
				lcp.DeletionTimestamp = ptr.To(metav1.Now())
			}
			if tt.initialized {
				lcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
			}
			s := tt.scope
			s.lcp = lcp

			setStatus(&s)

			g.Expect(ptr.Deref(lcp.Status.Initialization.ControlPlaneInitialized, false)).To(Equal(tt.want.initialized))
			g.Expect(lcp.Status.Version).To(Equal(tt.want.version))
			g.Expect(lcp.Status.ExternalManagedControlPlane).To(Equal(ptr.To(true)), "no Node of the cluster is a control plane: Cluster API may drain and delete every Node")
			for _, c := range []struct {
				conditionType string
				status        metav1.ConditionStatus
				reason        string
			}{
				{controlplanev1.AvailableCondition, tt.want.available, tt.want.availableReason},
				{controlplanev1.ProcessesRunningCondition, tt.want.processes, tt.want.processesReason},
				{controlplanev1.CertificatesAvailableCondition, tt.want.certificates, tt.want.certificatesReas},
			} {
				got := conditions.Get(lcp, c.conditionType)
				g.Expect(got).NotTo(BeNil(), c.conditionType)
				g.Expect(got.Status).To(Equal(c.status), c.conditionType)
				g.Expect(got.Reason).To(Equal(c.reason), c.conditionType)
				g.Expect(got.Message).NotTo(BeEmpty(), c.conditionType)
				g.Expect(got.ObservedGeneration).To(Equal(int64(2)), c.conditionType)
			}
		})
	}
}

func TestSetStatusNamesRestartedProcesses(t *testing.T) {
	g := NewWithT(t)
	lcp := &controlplanev1.LocalControlPlane{}
	s := &scope{
		lcp:       lcp,
		cluster:   &clusterv1.Cluster{},
		processes: &controlplane.Status{Processes: []controlplane.ProcessStatus{{Name: "etcd", PID: 41}, {Name: "kube-apiserver", PID: 42}}},
		restarted: []string{"kube-apiserver (pid 42)"},
	}

	setStatus(s)

	g.Expect(conditions.GetMessage(lcp, controlplanev1.ProcessesRunningCondition)).To(
		Equal("Running etcd, kube-apiserver; restarted kube-apiserver (pid 42)"))

	// Later reconciles still say how often it was restarted, and how it ended.
	s.restarted = nil
	s.processes.Processes[1].History = process.History{Restarts: 3, LastExit: "signal: killed"}
	setStatus(s)
	g.Expect(conditions.GetMessage(lcp, controlplanev1.ProcessesRunningCondition)).To(
		Equal("Running etcd, kube-apiserver; restarted kube-apiserver 3 time(s) (last: exited (signal: killed))"))
}

func TestSetStatusSaysWhyAProcessDoesNotRunAndWhenItStarts(t *testing.T) {
	next := time.Now().Add(8*time.Second + 400*time.Millisecond) // "8s" for most of a second
	tests := []struct {
		name        string
		history     process.History
		wantReason  string
		wantMessage string
	}{
		{
			name:        "a process that exited once waits a moment",
			history:     process.History{Failures: 1, LastExit: "signal: killed", NextStart: next},
			wantReason:  controlplanev1.ProcessRestartingReason,
			wantMessage: "kube-apiserver exited (signal: killed), 1 time(s) in a row within 30s of its start; starting it again in 8s (see /logs/kube-apiserver.log)",
		},
		{
			name:        "a process that keeps exiting crash loops",
			history:     process.History{Failures: 4, LastExit: "exit status 1", NextStart: next},
			wantReason:  controlplanev1.CrashLoopBackOffReason,
			wantMessage: "kube-apiserver exited (exit status 1), 4 time(s) in a row within 30s of its start; starting it again in 8s (see /logs/kube-apiserver.log)",
		},
		{
			name:        "a taken port is named",
			history:     process.History{Failures: 5, LastExit: "not started: taken", PortInUse: "127.0.0.1:6443", NextStart: next},
			wantReason:  controlplanev1.PortInUseReason,
			wantMessage: "kube-apiserver cannot start: 127.0.0.1:6443 is in use by another program; trying again in 8s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lcp := &controlplanev1.LocalControlPlane{}
			setStatus(&scope{lcp: lcp, cluster: &clusterv1.Cluster{}, processes: &controlplane.Status{Processes: []controlplane.ProcessStatus{
				{Name: "etcd", PID: 41},
				{Name: "kube-apiserver", Log: "/logs/kube-apiserver.log", History: tt.history},
			}}})
			got := conditions.Get(lcp, controlplanev1.ProcessesRunningCondition)
			g.Expect(got.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(got.Reason).To(Equal(tt.wantReason))
			g.Expect(got.Message).To(Equal(tt.wantMessage))
		})
	}
}

func TestSetStatusKeepsAvailableWhenNothingWasProbed(t *testing.T) {
	g := NewWithT(t)
	lcp := &controlplanev1.LocalControlPlane{}
	conditions.Set(lcp, metav1.Condition{Type: controlplanev1.AvailableCondition, Status: metav1.ConditionTrue, Reason: controlplanev1.AvailableReason, Message: "kube-apiserver v1.36.3 answers"})

	// An earlier phase failed before Ensure ran (e.g. the CA Secret could not be read).
	setStatus(&scope{lcp: lcp, cluster: &clusterv1.Cluster{}})

	g.Expect(conditions.IsTrue(lcp, controlplanev1.AvailableCondition)).To(BeTrue())
}
