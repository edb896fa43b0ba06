package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// clock is a fake clock that only moves when a phase says so.
type clock struct{ now time.Time }

func newClock() *clock { return &clock{now: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// state is the shared state of the test workflows.
type state struct {
	Ran                 []string `json:"ran"`
	BootstrapKubeconfig string   `json:"bootstrapKubeconfig,omitempty"`
}

// phase returns a phase that records that it ran and takes d on the fake clock.
func phase(c *clock, name string, d time.Duration) Phase[state] {
	return Phase[state]{Name: name, Run: func(_ context.Context, s *state) error {
		c.Advance(d)
		s.Ran = append(s.Ran, name)
		return nil
	}}
}

// failing returns a phase that takes d and fails with err.
func failing(c *clock, name string, d time.Duration, err error) Phase[state] {
	return Phase[state]{Name: name, Run: func(context.Context, *state) error {
		c.Advance(d)
		return err
	}}
}

func readCheckpoint(g Gomega, path string) *Checkpoint {
	cp, err := ReadCheckpoint(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp).NotTo(BeNil())
	return cp
}

func TestRunPrintsPhasesInOrderWithTimings(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	wf := Workflow[state]{Name: "create-management-cluster", Phases: []Phase[state]{
		phase(c, "SetupAndValidate", 12*time.Millisecond),
		phase(c, "CreateBootstrapCluster", 4230*time.Millisecond),
		phase(c, "InstallComponents", 63400*time.Millisecond),
	}}
	var out bytes.Buffer
	var s state

	err := wf.Run(context.Background(), &s, Options{Out: &out, Now: c.Now})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Ran).To(Equal([]string{"SetupAndValidate", "CreateBootstrapCluster", "InstallComponents"}))
	g.Expect(out.String()).To(Equal(`▶ SetupAndValidate
✓ SetupAndValidate (12ms)
▶ CreateBootstrapCluster
✓ CreateBootstrapCluster (4.2s)
▶ InstallComponents
✓ InstallComponents (1m3s)
✓ create-management-cluster completed in 1m8s
`))
}

func TestRunExplainsSkippedPhases(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	dir := t.TempDir()
	skipped := phase(c, "CreateBootstrapCluster", time.Second)
	skipped.Skip = func(context.Context, *state) (bool, string) {
		return true, "--kubeconfig names an existing management cluster"
	}
	notSkipped := phase(c, "CreateWorkloadCluster", time.Second)
	notSkipped.Skip = func(context.Context, *state) (bool, string) { return false, "" }
	wf := Workflow[state]{Name: "create", Phases: []Phase[state]{
		phase(c, "SetupAndValidate", time.Second), skipped, notSkipped,
		failing(c, "InstallAddOns", time.Second, errors.New("boom")),
	}}
	var out bytes.Buffer
	var s state

	err := wf.Run(context.Background(), &s, Options{Out: &out, Now: c.Now, CheckpointPath: filepath.Join(dir, "cp.json")})

	g.Expect(err).To(HaveOccurred())
	g.Expect(s.Ran).To(Equal([]string{"SetupAndValidate", "CreateWorkloadCluster"}))
	g.Expect(out.String()).To(ContainSubstring("○ CreateBootstrapCluster skipped: --kubeconfig names an existing management cluster\n"))
	g.Expect(out.String()).NotTo(ContainSubstring("▶ CreateBootstrapCluster"))
	// A skipped phase did nothing, so the checkpoint does not claim it completed: a resumed run
	// asks Skip again.
	g.Expect(readCheckpoint(g, filepath.Join(dir, "cp.json")).Completed).To(Equal([]string{"SetupAndValidate", "CreateWorkloadCluster"}))
}

func TestRunWritesACheckpointWhenAPhaseFails(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	path := filepath.Join(t.TempDir(), "checkpoints", "create-mgmt.json")
	boom := errors.New("port 6443 is in use")
	var lastRan bool
	wf := Workflow[state]{Name: "create-management-cluster", Phases: []Phase[state]{
		phase(c, "SetupAndValidate", time.Second),
		{Name: "CreateBootstrapCluster", Run: func(_ context.Context, s *state) error {
			c.Advance(2 * time.Second)
			s.BootstrapKubeconfig = "/home/me/.flotilla/bootstrap.kubeconfig"
			return nil
		}},
		failing(c, "InstallComponents", 1300*time.Millisecond, boom),
		{Name: "CreateWorkloadCluster", Run: func(context.Context, *state) error { lastRan = true; return nil }},
	}}
	var out bytes.Buffer
	var s state

	err := wf.Run(context.Background(), &s, Options{Out: &out, Now: c.Now, CheckpointPath: path, Fingerprint: "sha256:aaa"})

	g.Expect(lastRan).To(BeFalse(), "no phase runs after a failure")
	g.Expect(err).To(MatchError(boom), "the phase's error is wrapped")
	var perr *PhaseError
	g.Expect(errors.As(err, &perr)).To(BeTrue())
	g.Expect(perr.Phase).To(Equal("InstallComponents"))
	g.Expect(perr.CheckpointPath).To(Equal(path))
	g.Expect(err.Error()).To(Equal("InstallComponents failed: port 6443 is in use\n" +
		"Progress is saved in " + path + ": fix the cause and run the same command again to resume from InstallComponents."))
	g.Expect(out.String()).To(HaveSuffix("▶ InstallComponents\n✗ InstallComponents failed after 1.3s: port 6443 is in use\n" +
		"✗ create-management-cluster failed after 4.3s\n"))

	cp := readCheckpoint(g, path)
	g.Expect(cp.Workflow).To(Equal("create-management-cluster"))
	g.Expect(cp.Fingerprint).To(Equal("sha256:aaa"))
	g.Expect(cp.Completed).To(Equal([]string{"SetupAndValidate", "CreateBootstrapCluster"}))
	g.Expect(cp.Failed).To(Equal(&Failure{Phase: "InstallComponents", Error: "port 6443 is in use", At: c.Now()}))
	g.Expect(cp.StartedAt).To(Equal(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)))
	g.Expect(cp.UpdatedAt).To(Equal(c.Now()))
	g.Expect(cp.State).To(MatchJSON(`{"ran":["SetupAndValidate"],"bootstrapKubeconfig":"/home/me/.flotilla/bootstrap.kubeconfig"}`))

	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	entries, err := os.ReadDir(filepath.Dir(path))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "the temporary file was renamed into place")
}

func TestRunResumesAfterTheCompletedPhases(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	path := filepath.Join(t.TempDir(), "cp.json")
	installFails := true
	var ran []string
	record := func(name string) Phase[state] {
		return Phase[state]{Name: name, Run: func(context.Context, *state) error {
			ran = append(ran, name)
			return nil
		}}
	}
	wf := Workflow[state]{Name: "create", Phases: []Phase[state]{
		record("SetupAndValidate"),
		{Name: "CreateBootstrapCluster", Run: func(_ context.Context, s *state) error {
			ran = append(ran, "CreateBootstrapCluster")
			s.BootstrapKubeconfig = "/tmp/bootstrap.kubeconfig"
			return nil
		}},
		{Name: "InstallComponents", Run: func(_ context.Context, s *state) error {
			ran = append(ran, "InstallComponents")
			if installFails {
				return errors.New("webhook not ready")
			}
			if s.BootstrapKubeconfig != "/tmp/bootstrap.kubeconfig" {
				return errors.New("state was not restored from the checkpoint")
			}
			return nil
		}},
		record("CreateWorkloadCluster"),
	}}
	opts := Options{Now: c.Now, CheckpointPath: path, Fingerprint: "sha256:aaa"}
	g.Expect(wf.Run(context.Background(), &state{}, opts)).NotTo(Succeed())
	g.Expect(ran).To(Equal([]string{"SetupAndValidate", "CreateBootstrapCluster", "InstallComponents"}))

	installFails = false
	ran = nil
	var out bytes.Buffer
	opts.Out = &out
	err := wf.Run(context.Background(), &state{}, opts)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ran).To(Equal([]string{"InstallComponents", "CreateWorkloadCluster"}))
	g.Expect(out.String()).To(HavePrefix("Resuming create from " + path + " (it failed in InstallComponents at 2026-05-01T10:00:00Z)\n" +
		"○ SetupAndValidate already done (checkpoint)\n" +
		"○ CreateBootstrapCluster already done (checkpoint)\n" +
		"▶ InstallComponents\n"))
	g.Expect(path).NotTo(BeAnExistingFile(), "a successful run removes the checkpoint")
}

func TestRunKeepsEarlierProgressWhenAResumedRunFailsAgain(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	path := filepath.Join(t.TempDir(), "cp.json")
	failAt := "InstallComponents"
	step := func(name string) Phase[state] {
		return Phase[state]{Name: name, Run: func(context.Context, *state) error {
			if name == failAt {
				return errors.New("failed")
			}
			return nil
		}}
	}
	wf := Workflow[state]{Name: "create", Phases: []Phase[state]{
		step("SetupAndValidate"), step("InstallComponents"), step("CreateWorkloadCluster"), step("InstallAddOns"),
	}}
	opts := Options{Now: c.Now, CheckpointPath: path}
	g.Expect(wf.Run(context.Background(), &state{}, opts)).NotTo(Succeed())
	firstStart := readCheckpoint(g, path).StartedAt

	c.Advance(time.Hour)
	failAt = "InstallAddOns"
	g.Expect(wf.Run(context.Background(), &state{}, opts)).NotTo(Succeed())

	cp := readCheckpoint(g, path)
	g.Expect(cp.Completed).To(Equal([]string{"SetupAndValidate", "InstallComponents", "CreateWorkloadCluster"}))
	g.Expect(cp.Failed.Phase).To(Equal("InstallAddOns"))
	g.Expect(cp.StartedAt).To(Equal(firstStart), "the checkpoint remembers when the first attempt started")
	g.Expect(cp.UpdatedAt).To(Equal(c.Now()))
}

func TestRunRefusesAStaleCheckpoint(t *testing.T) {
	tests := []struct {
		name       string
		checkpoint string
		reason     string
	}{
		{
			name:       "a checkpoint written for other inputs is stale",
			checkpoint: `{"workflow":"create","fingerprint":"sha256:old","completed":["SetupAndValidate"],"failed":{"phase":"InstallComponents","error":"boom","at":"2026-05-01T10:00:00Z"}}`,
			reason:     "because the inputs (spec file or flags) changed since it was written (that run failed in InstallComponents at 2026-05-01T10:00:00Z: boom)",
		},
		{
			name:       "a checkpoint written by another workflow is stale",
			checkpoint: `{"workflow":"delete","fingerprint":"sha256:new","completed":["SetupAndValidate"]}`,
			reason:     `because it was written by the workflow "delete", not "create"`,
		},
		{
			name:       "an unreadable checkpoint is stale",
			checkpoint: `{"workflow":`,
			reason:     "because it cannot be read (unexpected end of JSON input)",
		},
		{
			name:       "a checkpoint whose state no longer fits is stale",
			checkpoint: `{"workflow":"create","fingerprint":"sha256:new","state":{"ran":"not a list"}}`,
			reason:     "because its saved state does not fit this version of the workflow",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newClock()
			path := filepath.Join(t.TempDir(), "cp.json")
			g.Expect(os.WriteFile(path, []byte(tt.checkpoint), 0o600)).To(Succeed())
			s := state{}
			wf := Workflow[state]{Name: "create", Phases: []Phase[state]{phase(c, "SetupAndValidate", time.Second)}}

			err := wf.Run(context.Background(), &s, Options{Now: c.Now, CheckpointPath: path, Fingerprint: "sha256:new"})

			var stale *StaleCheckpointError
			g.Expect(errors.As(err, &stale)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(HavePrefix("found a checkpoint from an earlier run at " + path + ", but it does not match this run " + tt.reason))
			g.Expect(err.Error()).To(HaveSuffix("To start over instead, remove the checkpoint: rm " + path))
			g.Expect(s.Ran).To(BeEmpty(), "no phase runs")
			g.Expect(os.ReadFile(path)).To(Equal([]byte(tt.checkpoint)), "the checkpoint is left for the user to decide")
		})
	}
}

func TestRunAlwaysRunsAlwaysPhases(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	path := filepath.Join(t.TempDir(), "cp.json")
	boom := errors.New("move failed")
	var prior []error
	var ctxErr []error
	ctx, cancel := context.WithCancel(context.Background())
	wf := Workflow[state]{Name: "create", Phases: []Phase[state]{
		phase(c, "SetupAndValidate", time.Second),
		{Name: "MoveManagement", Run: func(context.Context, *state) error { cancel(); return boom }},
		phase(c, "InstallAddOns", time.Second),
		{Name: "ResumeReconciliation", Always: true, Run: func(ctx context.Context, s *state) error {
			prior = append(prior, PriorError(ctx))
			ctxErr = append(ctxErr, ctx.Err())
			s.Ran = append(s.Ran, "ResumeReconciliation")
			return nil
		}},
	}}
	var s state
	var out bytes.Buffer

	err := wf.Run(ctx, &s, Options{Out: &out, Now: c.Now, CheckpointPath: path})

	g.Expect(err).To(MatchError(boom))
	g.Expect(s.Ran).To(Equal([]string{"SetupAndValidate", "ResumeReconciliation"}))
	g.Expect(prior).To(Equal([]error{boom}), "the always phase learns that the run is failing")
	g.Expect(ctxErr).To(Equal([]error{nil}), "the always phase runs although the run was interrupted")
	g.Expect(out.String()).To(ContainSubstring("✓ ResumeReconciliation"))
	cp := readCheckpoint(g, path)
	g.Expect(cp.Completed).To(Equal([]string{"SetupAndValidate"}), "always phases are not recorded")
	g.Expect(cp.Failed.Phase).To(Equal("MoveManagement"))

	// On the resumed, successful run the always phase runs again and sees no failure.
	prior, ctxErr = nil, nil
	wf.Phases[1] = phase(c, "MoveManagement", time.Second)
	s = state{}
	g.Expect(wf.Run(context.Background(), &s, Options{Now: c.Now, CheckpointPath: path})).To(Succeed())
	g.Expect(s.Ran).To(Equal([]string{
		"SetupAndValidate", "ResumeReconciliation", // restored from the checkpoint
		"MoveManagement", "InstallAddOns", "ResumeReconciliation",
	}))
	g.Expect(prior).To(Equal([]error{nil}))
}

func TestRunReportsAFailingAlwaysPhase(t *testing.T) {
	tests := []struct {
		name        string
		phases      func(c *clock) []Phase[state]
		failedPhase string
		message     string
	}{
		{
			name: "an always phase that fails after a successful run fails the run",
			phases: func(c *clock) []Phase[state] {
				return []Phase[state]{
					phase(c, "SetupAndValidate", time.Second),
					{Name: "ResumeReconciliation", Always: true, Run: func(context.Context, *state) error { return errors.New("unpause failed") }},
				}
			},
			failedPhase: "ResumeReconciliation",
			message:     "ResumeReconciliation failed: unpause failed",
		},
		{
			name: "an always phase that fails after an earlier failure is reported with it",
			phases: func(c *clock) []Phase[state] {
				return []Phase[state]{
					failing(c, "MoveManagement", time.Second, errors.New("move failed")),
					{Name: "ResumeReconciliation", Always: true, Run: func(context.Context, *state) error { return errors.New("unpause failed") }},
				}
			},
			failedPhase: "MoveManagement",
			message:     "MoveManagement failed: move failed\nResumeReconciliation: unpause failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newClock()
			wf := Workflow[state]{Name: "create", Phases: tt.phases(c)}

			err := wf.Run(context.Background(), &state{}, Options{Now: c.Now})

			var perr *PhaseError
			g.Expect(errors.As(err, &perr)).To(BeTrue())
			g.Expect(perr.Phase).To(Equal(tt.failedPhase))
			g.Expect(err.Error()).To(Equal(tt.message), "without a checkpoint path there is no resume hint")
		})
	}
}

func TestRunDoesNotStartPhasesOnceInterrupted(t *testing.T) {
	g := NewWithT(t)
	c := newClock()
	path := filepath.Join(t.TempDir(), "cp.json")
	ctx, cancel := context.WithCancel(context.Background())
	wf := Workflow[state]{Name: "create", Phases: []Phase[state]{
		{Name: "SetupAndValidate", Run: func(_ context.Context, s *state) error {
			s.Ran = append(s.Ran, "SetupAndValidate")
			cancel() // Ctrl-C arrives while the phase finishes successfully.
			return nil
		}},
		phase(c, "CreateBootstrapCluster", time.Second),
	}}
	var s state
	var out bytes.Buffer

	err := wf.Run(ctx, &s, Options{Out: &out, Now: c.Now, CheckpointPath: path})

	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(s.Ran).To(Equal([]string{"SetupAndValidate"}))
	g.Expect(out.String()).To(ContainSubstring("✗ CreateBootstrapCluster not started: context canceled\n"))
	cp := readCheckpoint(g, path)
	g.Expect(cp.Completed).To(Equal([]string{"SetupAndValidate"}))
	g.Expect(cp.Failed.Phase).To(Equal("CreateBootstrapCluster"))
}

func TestRunRejectsMalformedWorkflows(t *testing.T) {
	noop := func(context.Context, *state) error { return nil }
	tests := []struct {
		name    string
		wf      Workflow[state]
		message string
	}{
		{name: "a workflow needs a name", wf: Workflow[state]{Phases: []Phase[state]{{Name: "A", Run: noop}}}, message: "workflow has no name"},
		{name: "a workflow needs phases", wf: Workflow[state]{Name: "w"}, message: "workflow w has no phases"},
		{name: "a phase needs a name", wf: Workflow[state]{Name: "w", Phases: []Phase[state]{{Run: noop}}}, message: "workflow w: phase 0 has no name"},
		{name: "phase names are unique", wf: Workflow[state]{Name: "w", Phases: []Phase[state]{{Name: "A", Run: noop}, {Name: "A", Run: noop}}}, message: `workflow w: phase name "A" is used twice`},
		{name: "a phase needs a Run function", wf: Workflow[state]{Name: "w", Phases: []Phase[state]{{Name: "A"}}}, message: "workflow w: phase A has no Run function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.wf.Run(context.Background(), &state{}, Options{})).To(MatchError(tt.message))
		})
	}
}

func TestFingerprint(t *testing.T) {
	g := NewWithT(t)
	type inputs struct {
		Spec       []byte
		Kubeconfig string
	}
	a, err := Fingerprint(inputs{Spec: []byte("kind: Cluster"), Kubeconfig: ""})
	g.Expect(err).NotTo(HaveOccurred())
	again, err := Fingerprint(inputs{Spec: []byte("kind: Cluster"), Kubeconfig: ""})
	g.Expect(err).NotTo(HaveOccurred())
	other, err := Fingerprint(inputs{Spec: []byte("kind: Cluster"), Kubeconfig: "mgmt.kubeconfig"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(a).To(HavePrefix("sha256:"))
	g.Expect(again).To(Equal(a), "the same inputs give the same fingerprint")
	g.Expect(other).NotTo(Equal(a), "other inputs give another fingerprint")
	_, err = Fingerprint(func() {})
	g.Expect(err).To(MatchError(ContainSubstring("encoding fingerprint input 0")))
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "under a second shows milliseconds", d: 12345 * time.Microsecond, want: "12ms"},
		{name: "under a minute shows tenths of a second", d: 4249 * time.Millisecond, want: "4.2s"},
		{name: "a minute or more shows whole seconds", d: 63600 * time.Millisecond, want: "1m4s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(formatDuration(tt.d)).To(Equal(tt.want))
		})
	}
}

func TestCheckpointIsReadableJSON(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "cp.json")
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	g.Expect(writeCheckpoint(path, &Checkpoint{
		Workflow: "create", Fingerprint: "sha256:x", Completed: []string{"A"},
		Failed: &Failure{Phase: "B", Error: "boom", At: at}, StartedAt: at, UpdatedAt: at,
		State: json.RawMessage(`{"ran":["A"]}`),
	})).To(Succeed())
	g.Expect(os.ReadFile(path)).To(MatchJSON(`{
		"workflow": "create", "fingerprint": "sha256:x", "completed": ["A"],
		"failed": {"phase": "B", "error": "boom", "at": "2026-05-01T10:00:00Z"},
		"startedAt": "2026-05-01T10:00:00Z", "updatedAt": "2026-05-01T10:00:00Z",
		"state": {"ran": ["A"]}
	}`))
}

func TestRunSavesProgressEvenWhenTheStateCannotBeEncoded(t *testing.T) {
	g := NewWithT(t)
	type unencodable struct{ Done chan struct{} }
	path := filepath.Join(t.TempDir(), "cp.json")
	wf := Workflow[unencodable]{Name: "create", Phases: []Phase[unencodable]{
		{Name: "SetupAndValidate", Run: func(context.Context, *unencodable) error { return nil }},
		{Name: "CreateBootstrapCluster", Run: func(context.Context, *unencodable) error { return errors.New("boom") }},
	}}
	var out bytes.Buffer

	err := wf.Run(context.Background(), &unencodable{Done: make(chan struct{})}, Options{Out: &out, CheckpointPath: path})

	var perr *PhaseError
	g.Expect(errors.As(err, &perr)).To(BeTrue())
	g.Expect(perr.CheckpointPath).To(Equal(path))
	g.Expect(out.String()).To(ContainSubstring("Warning: the workflow's state could not be saved with the checkpoint: json: unsupported type: chan struct {}\n"))
	cp := readCheckpoint(g, path)
	g.Expect(cp.Completed).To(Equal([]string{"SetupAndValidate"}))
	g.Expect(cp.State).To(BeEmpty())
}
