package workflow

import (
	"fmt"
	"strings"
	"time"
)

// PhaseError is returned by Workflow.Run when a phase failed.
type PhaseError struct {
	// Workflow is the workflow's name.
	Workflow string
	// Phase is the phase that failed first.
	Phase string
	// Err is its error, joined with the errors of Always phases that failed after it.
	Err error
	// CheckpointPath is where the checkpoint was written; empty when none was.
	CheckpointPath string
	// CheckpointErr is why the checkpoint could not be written, if it could not.
	CheckpointErr error
}

func (e *PhaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed: %v", e.Phase, e.Err)
	switch {
	case e.CheckpointPath != "":
		fmt.Fprintf(&b, "\nProgress is saved in %s: fix the cause and run the same command again to resume from %s.",
			e.CheckpointPath, e.Phase)
	case e.CheckpointErr != nil:
		fmt.Fprintf(&b, "\nThe checkpoint could not be written (%v): running the command again starts from the beginning.",
			e.CheckpointErr)
	}
	return b.String()
}

// Unwrap returns the phase's error, so errors.Is and errors.As see it.
func (e *PhaseError) Unwrap() error { return e.Err }

// StaleCheckpointError is returned by Workflow.Run when the checkpoint at the configured path
// does not belong to this run: another workflow wrote it, the inputs changed, or it is
// unreadable. Run does not resume from it and does not remove it; the user decides.
type StaleCheckpointError struct {
	// Path of the checkpoint.
	Path string
	// Reason it is stale, phrased to follow "because".
	Reason string
	// Checkpoint is the stale checkpoint, when it could be read.
	Checkpoint *Checkpoint
}

func (e *StaleCheckpointError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "found a checkpoint from an earlier run at %s, but it does not match this run because %s", e.Path, e.Reason)
	if cp := e.Checkpoint; cp != nil && cp.Failed != nil {
		fmt.Fprintf(&b, " (that run failed in %s at %s: %s)", cp.Failed.Phase, cp.Failed.At.Format(time.RFC3339), cp.Failed.Error)
	}
	fmt.Fprintf(&b, ".\nTo resume that run, run it again with the same inputs. To start over instead, remove the checkpoint: rm %s", e.Path)
	return b.String()
}
