package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Phase is one named step of a Workflow. S is the state the phases share.
type Phase[S any] struct {
	// Name identifies the phase in output and in checkpoints, such as "CreateBootstrapCluster".
	// Names are unique within a workflow; renaming a phase makes old checkpoints forget it.
	Name string

	// Run does the phase's work. It should be safe to run again after it failed half-way.
	Run func(ctx context.Context, state *S) error

	// Skip, when set, is asked just before Run. Returning true skips the phase; reason is shown
	// as "skipped: <reason>", so phrase it as the cause, such as "--kubeconfig names an
	// existing management cluster".
	Skip func(ctx context.Context, state *S) (skip bool, reason string)

	// Always runs the phase even when an earlier phase failed, and on every run regardless of
	// checkpoints. Its context is not cancelled with the workflow's context (bound it yourself
	// if it may hang), and PriorError tells it whether an earlier phase failed. Use it for
	// clean-up that must not be left undone, such as resuming reconciliation after a move.
	Always bool
}

// Workflow is a named, ordered list of phases over shared state S.
type Workflow[S any] struct {
	// Name identifies the workflow in output and checkpoints, such as
	// "create-management-cluster".
	Name string
	// Phases run in order.
	Phases []Phase[S]
}

// Options are the per-run settings of Workflow.Run.
type Options struct {
	// Out receives the progress lines. Nil discards them.
	Out io.Writer

	// CheckpointPath is where a failed run writes its checkpoint and where the next run looks
	// for one. Empty disables checkpoints: a failed run starts from the beginning next time.
	CheckpointPath string

	// Fingerprint identifies the run's inputs (see the Fingerprint function). A checkpoint
	// written with another fingerprint is stale and Run refuses to resume from it.
	Fingerprint string

	// Now returns the current time. Nil means time.Now; tests inject a clock.
	Now func() time.Time
}

// Run runs the workflow's phases in order, sharing state between them. It resumes from the
// checkpoint at opts.CheckpointPath when there is one for this workflow and fingerprint, and
// refuses with a *StaleCheckpointError when the checkpoint is for anything else. When a phase
// fails Run writes a checkpoint and returns a *PhaseError; when every phase succeeds it removes
// the checkpoint and returns nil.
func (w *Workflow[S]) Run(ctx context.Context, state *S, opts Options) error {
	if err := w.validate(state); err != nil {
		return err
	}
	r := &run[S]{wf: w, state: state, opts: opts}
	if r.opts.Out == nil {
		r.opts.Out = io.Discard
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	return r.execute(ctx)
}

func (w *Workflow[S]) validate(state *S) error {
	if w.Name == "" {
		return errors.New("workflow has no name")
	}
	if state == nil {
		return fmt.Errorf("workflow %s: state is nil", w.Name)
	}
	if len(w.Phases) == 0 {
		return fmt.Errorf("workflow %s has no phases", w.Name)
	}
	seen := make(map[string]bool, len(w.Phases))
	for i, p := range w.Phases {
		switch {
		case p.Name == "":
			return fmt.Errorf("workflow %s: phase %d has no name", w.Name, i)
		case seen[p.Name]:
			return fmt.Errorf("workflow %s: phase name %q is used twice", w.Name, p.Name)
		case p.Run == nil:
			return fmt.Errorf("workflow %s: phase %s has no Run function", w.Name, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// run is the state of one execution of a workflow.
type run[S any] struct {
	wf    *Workflow[S]
	state *S
	opts  Options

	// previous is the checkpoint this run resumes from, if any.
	previous *Checkpoint
	// next is the checkpoint this run writes if it fails.
	next Checkpoint

	// failure is the first failure of this run and err its error; alwaysErrs are failures of
	// Always phases that ran after it.
	failure    *Failure
	err        error
	alwaysErrs []error
}

func (r *run[S]) execute(ctx context.Context) error {
	start := r.opts.Now()
	r.next = Checkpoint{Workflow: r.wf.Name, Fingerprint: r.opts.Fingerprint, StartedAt: start}
	if err := r.resume(); err != nil {
		return err
	}

	for _, p := range r.wf.Phases {
		r.runPhase(ctx, p)
	}

	total := r.opts.Now().Sub(start)
	if r.failure == nil {
		r.printf("✓ %s completed in %s\n", r.wf.Name, formatDuration(total))
		if r.opts.CheckpointPath != "" {
			if err := removeCheckpoint(r.opts.CheckpointPath); err != nil {
				return fmt.Errorf("%s completed, but its checkpoint remains (a re-run would skip everything): %w; remove it: rm %s",
					r.wf.Name, err, r.opts.CheckpointPath)
			}
		}
		return nil
	}

	r.printf("✗ %s failed after %s\n", r.wf.Name, formatDuration(total))
	perr := &PhaseError{
		Workflow: r.wf.Name,
		Phase:    r.failure.Phase,
		Err:      errors.Join(append([]error{r.err}, r.alwaysErrs...)...),
	}
	if r.opts.CheckpointPath != "" {
		perr.CheckpointErr = r.writeCheckpoint()
		if perr.CheckpointErr == nil {
			perr.CheckpointPath = r.opts.CheckpointPath
		}
	}
	return perr
}

// resume loads the checkpoint, if any, checks that it belongs to this run and restores the
// state from it.
func (r *run[S]) resume() error {
	if r.opts.CheckpointPath == "" {
		return nil
	}
	cp, err := ReadCheckpoint(r.opts.CheckpointPath)
	if err != nil {
		return err
	}
	if cp == nil {
		return nil
	}
	switch {
	case cp.Workflow != r.wf.Name:
		return &StaleCheckpointError{Path: r.opts.CheckpointPath, Checkpoint: cp,
			Reason: fmt.Sprintf("it was written by the workflow %q, not %q", cp.Workflow, r.wf.Name)}
	case cp.Fingerprint != r.opts.Fingerprint:
		return &StaleCheckpointError{Path: r.opts.CheckpointPath, Checkpoint: cp,
			Reason: "the inputs (spec file or flags) changed since it was written"}
	}
	if len(cp.State) > 0 {
		if err := json.Unmarshal(cp.State, r.state); err != nil {
			return &StaleCheckpointError{Path: r.opts.CheckpointPath, Checkpoint: cp,
				Reason: fmt.Sprintf("its saved state does not fit this version of the workflow (%v)", err)}
		}
	}
	r.previous = cp
	r.next.StartedAt = cp.StartedAt
	r.next.Completed = append(r.next.Completed, cp.Completed...)
	if cp.Failed != nil {
		r.printf("Resuming %s from %s (it failed in %s at %s)\n",
			r.wf.Name, r.opts.CheckpointPath, cp.Failed.Phase, cp.Failed.At.Format(time.RFC3339))
	} else {
		r.printf("Resuming %s from %s\n", r.wf.Name, r.opts.CheckpointPath)
	}
	return nil
}

// runPhase runs one phase, or explains why it does not run, and records the outcome.
func (r *run[S]) runPhase(ctx context.Context, p Phase[S]) {
	if r.failure != nil && !p.Always {
		return
	}
	if !p.Always && r.previous != nil && r.previous.completed(p.Name) {
		r.printf("○ %s already done (checkpoint)\n", p.Name)
		return
	}

	phaseCtx := ctx
	if p.Always {
		phaseCtx = context.WithValue(context.WithoutCancel(ctx), priorErrorKey{}, r.err)
	} else if err := ctx.Err(); err != nil {
		r.printf("✗ %s not started: %v\n", p.Name, err)
		r.fail(p.Name, fmt.Errorf("interrupted before it started: %w", err))
		return
	}

	if p.Skip != nil {
		if skip, reason := p.Skip(phaseCtx, r.state); skip {
			r.printf("○ %s skipped: %s\n", p.Name, reason)
			return
		}
	}

	r.printf("▶ %s\n", p.Name)
	began := r.opts.Now()
	err := p.Run(phaseCtx, r.state)
	took := r.opts.Now().Sub(began)
	if err != nil {
		r.printf("✗ %s failed after %s: %v\n", p.Name, formatDuration(took), err)
		if r.failure != nil {
			r.alwaysErrs = append(r.alwaysErrs, fmt.Errorf("%s: %w", p.Name, err))
			return
		}
		r.fail(p.Name, err)
		return
	}
	r.printf("✓ %s (%s)\n", p.Name, formatDuration(took))
	if !p.Always && !r.next.completed(p.Name) {
		r.next.Completed = append(r.next.Completed, p.Name)
	}
}

func (r *run[S]) fail(phase string, err error) {
	r.err = err
	r.failure = &Failure{Phase: phase, Error: err.Error(), At: r.opts.Now()}
}

func (r *run[S]) writeCheckpoint() error {
	r.next.Failed = r.failure
	r.next.UpdatedAt = r.opts.Now()
	state, err := json.Marshal(r.state)
	if err != nil {
		// The progress is still worth saving; the phases must then rebuild their state.
		r.printf("Warning: the workflow's state could not be saved with the checkpoint: %v\n", err)
		state = nil
	}
	r.next.State = state
	return writeCheckpoint(r.opts.CheckpointPath, &r.next)
}

func (r *run[S]) printf(format string, args ...any) {
	// Progress output is best effort: a closed terminal must not fail the workflow.
	_, _ = fmt.Fprintf(r.opts.Out, format, args...)
}

type priorErrorKey struct{}

// PriorError returns, inside an Always phase, the error of the phase that failed earlier in the
// run, or nil when nothing failed. Elsewhere it returns nil.
func PriorError(ctx context.Context) error {
	err, _ := ctx.Value(priorErrorKey{}).(error)
	return err
}

// formatDuration rounds d for people: 12ms, 4.2s, 1m3s.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
