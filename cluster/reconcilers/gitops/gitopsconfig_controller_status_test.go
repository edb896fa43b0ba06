package gitops

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/cluster/spec"
)

// specFile is a workload cluster spec as found at path, with the Cluster's metadata and spec
// lines replaced by the pairs given.
func specFile(path string, cluster string, management bool, pairs ...string) gitopsrepo.SpecFile {
	data := `apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata:
  name: w1
  namespace: fleet
spec:
  management: false
  kubernetesVersion: "1.36"
  datacenterRef: {kind: LocalDatacenterConfig, name: w1}
  gitOpsRef: {kind: GitOpsConfig, name: fleet}
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata:
  name: w1
  namespace: fleet
`
	for i := 0; i+1 < len(pairs); i += 2 {
		data = strings.Replace(data, pairs[i], pairs[i+1], 1)
	}
	return gitopsrepo.SpecFile{Path: path, Cluster: cluster, Management: management, Data: []byte(data)}
}

func TestCheckSpec(t *testing.T) {
	config := &flotillav1.GitOpsConfig{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "fleet"}}
	workload := "clusters/mgmt/workload-clusters/w1/cluster.yaml"
	tests := []struct {
		name     string
		file     gitopsrepo.SpecFile
		wantOurs bool
		wantErr  string
		check    func(g Gomega, s *spec.Spec)
	}{
		{
			name: "a workload cluster's spec is ours, and managed by the directory's management cluster",
			file: specFile(workload, "w1", false), wantOurs: true,
			check: func(g Gomega, s *spec.Spec) {
				g.Expect(s.Cluster.Spec.ManagementCluster.Name).To(Equal("mgmt"))
				g.Expect(s.Objects).To(HaveLen(2))
			},
		},
		{
			name: "the management cluster's own spec is ours",
			file: specFile("clusters/mgmt/cluster.yaml", "mgmt", true,
				"name: w1\n", "name: mgmt\n", "management: false", "management: true",
				"gitOpsRef: {kind: GitOpsConfig, name: fleet}", "gitOpsRef: {kind: GitOpsConfig, name: fleet}\n---\napiVersion: cluster.flotilla.dev/v1alpha1\nkind: GitOpsConfig\nmetadata: {name: fleet, namespace: fleet}\nspec: {repository: /srv/fleet.git}"),
			wantOurs: true,
			check: func(g Gomega, s *spec.Spec) {
				g.Expect(s.Cluster.Spec.ManagementCluster.Name).To(Equal("mgmt"))
				g.Expect(s.Objects).NotTo(ContainElement(s.GitOpsConfig), "the GitOpsConfig is never applied from Git")
			},
		},
		{
			name: "a spec of another namespace is not ours",
			file: specFile(workload, "w1", false, "namespace: fleet\n", "namespace: other\n", "namespace: fleet\n", "namespace: other\n"),
		},
		{
			name: "a spec naming another GitOpsConfig is not ours",
			file: specFile(workload, "w1", false, "name: fleet}", "name: other}"),
		},
		{
			name:    "a spec without gitOpsRef is invalid",
			file:    specFile(workload, "w1", false, "  gitOpsRef: {kind: GitOpsConfig, name: fleet}\n", ""),
			wantErr: workload + `: Cluster "w1": spec.gitOpsRef: missing; a spec in the repository names the GitOpsConfig that applies it: set {kind: GitOpsConfig, name: fleet}`,
		},
		{
			name:    "a Cluster in another cluster's directory is invalid",
			file:    specFile(workload, "w1", false, "name: w1\n", "name: w2\n"),
			wantErr: workload + `: Cluster "w2": metadata.name: the file is in the directory of cluster "w1"`,
		},
		{
			name:    "a workload cluster's directory holding a management cluster is invalid",
			file:    specFile(workload, "w1", false, "management: false", "management: true"),
			wantErr: `spec.gitOpsRef: GitOpsConfig "fleet" not found in ` + workload,
		},
		{
			name:    "the management cluster's file holding a workload cluster is invalid",
			file:    specFile("clusters/mgmt/cluster.yaml", "mgmt", true, "name: w1\n", "name: mgmt\n"),
			wantErr: `clusters/mgmt/cluster.yaml: Cluster "mgmt": spec.management: false, but clusters/mgmt/cluster.yaml is the management cluster's spec`,
		},
		{
			name:    "a workload cluster managed by another management cluster is invalid",
			file:    specFile(workload, "w1", false, "  gitOpsRef:", "  managementCluster: {name: other}\n  gitOpsRef:"),
			wantErr: workload + `: Cluster "w1": spec.managementCluster.name: "other", but the file is in the directory of management cluster "mgmt"`,
		},
		{
			name:    "a spec the CLI would refuse is invalid, naming the line and field",
			file:    specFile(workload, "w1", false, `kubernetesVersion: "1.36"`, `kubernetesVersion: "1.20"`),
			wantErr: workload + `:8: document 1 (Cluster "w1"): spec.kubernetesVersion: Kubernetes 1.20 is not supported`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s, ours, err := checkSpec(config, "mgmt", tt.file)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ours).To(Equal(tt.wantOurs))
			if tt.check != nil {
				tt.check(g, s)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	mgmt := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "mgmt"}}
	tests := []struct {
		name        string
		scope       scope
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name:       "a paused sync says why",
			scope:      scope{management: mgmt, paused: "management cluster mgmt is paused (cluster.x-k8s.io/paused)"},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.PausedReason,
			wantMessage: "Not syncing: management cluster mgmt is paused (cluster.x-k8s.io/paused)",
		},
		{
			name:       "without a management cluster the sync waits",
			scope:      scope{waiting: "this API server holds no management Cluster"},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.WaitingForManagementClusterReason,
			wantMessage: "Waiting for a management cluster: this API server holds no management Cluster",
		},
		{
			name:       "a failure is SyncFailed with the failure as the message",
			scope:      scope{management: mgmt, failure: "pulling /srv/fleet.git (branch main): no Git repository at /srv/fleet.git"},
			wantStatus: metav1.ConditionFalse, wantReason: flotillav1.SyncFailedReason,
			wantMessage: "pulling /srv/fleet.git (branch main): no Git repository at /srv/fleet.git",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.scope
			s.config = &flotillav1.GitOpsConfig{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			cond := readyCondition(&s)
			g.Expect(cond.Type).To(Equal(flotillav1.ReadyCondition))
			g.Expect(cond.Status).To(Equal(tt.wantStatus))
			g.Expect(cond.Reason).To(Equal(tt.wantReason))
			g.Expect(cond.Message).To(Equal(tt.wantMessage))
			g.Expect(cond.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}

func TestSetStatusKeepsTheLastAppliedCommitWhenASyncFails(t *testing.T) {
	g := NewWithT(t)
	config := &flotillav1.GitOpsConfig{Status: flotillav1.GitOpsConfigStatus{
		LastAppliedCommit: "0123456789012345678901234567890123456789",
		Clusters:          []string{"fleet/w1"},
	}}
	s := &scope{config: config, statusBase: config.Status.DeepCopy(), management: &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "mgmt"}},
		failure: "commit abcdef0 holds invalid specs, so none is applied: ..."}
	setStatus(s)
	g.Expect(config.Status.LastAppliedCommit).To(Equal("0123456789012345678901234567890123456789"))
	g.Expect(config.Status.Clusters).To(Equal([]string{"fleet/w1"}))
	g.Expect(config.Status.Path).To(Equal("clusters/mgmt"))
	g.Expect(meta.IsStatusConditionFalse(config.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
}

func TestAFailureThatRepeatsIsRecordedOnce(t *testing.T) {
	g := NewWithT(t)
	recorder := &fakeRecorder{}
	r := &Reconciler{Recorder: recorder}
	config := &flotillav1.GitOpsConfig{}
	s := &scope{config: config, statusBase: config.Status.DeepCopy(), management: &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "mgmt"}},
		failure: "pulling: repository not found"}
	setStatus(s)
	r.recordEvents(context.Background(), s)
	g.Expect(recorder.reasons).To(Equal([]string{"SyncFailed"}))

	again := &scope{config: config, statusBase: config.Status.DeepCopy(), management: s.management, failure: s.failure}
	setStatus(again)
	r.recordEvents(context.Background(), again)
	g.Expect(recorder.reasons).To(Equal([]string{"SyncFailed"}), "the same failure is not recorded again")

	other := &scope{config: config, statusBase: config.Status.DeepCopy(), management: s.management, failure: "pulling: authentication required"}
	setStatus(other)
	r.recordEvents(context.Background(), other)
	g.Expect(recorder.reasons).To(Equal([]string{"SyncFailed", "SyncFailed"}), "a new failure is")
}

// fakeRecorder records the reasons of the Events it is given.
type fakeRecorder struct{ reasons []string }

func (f *fakeRecorder) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	f.reasons = append(f.reasons, reason)
}
