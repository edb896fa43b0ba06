// Package workflow runs long CLI operations as an ordered list of named phases, shows their
// progress with timings, and resumes after a failure.
//
// A Workflow is data: a name and a list of Phases, each with a Name, a Run function, an optional
// Skip function that explains itself, and an Always flag for clean-up work. The runner is generic
// over S, a caller-defined struct the phases share: whatever one phase records there (a
// kubeconfig path, a chosen port) the next phases read.
//
//	type createState struct{ BootstrapKubeconfig string }
//
//	wf := workflow.Workflow[createState]{
//		Name: "create-management-cluster",
//		Phases: []workflow.Phase[createState]{
//			{Name: "SetupAndValidate", Run: o.setupAndValidate},
//			{Name: "CreateBootstrapCluster", Run: o.createBootstrap, Skip: o.skipWithKubeconfig},
//			...
//			{Name: "ResumeReconciliation", Run: o.unpause, Always: true},
//		},
//	}
//	err := wf.Run(ctx, &state, workflow.Options{
//		Out:            streams.ErrOut,
//		CheckpointPath: filepath.Join(home, "checkpoints", "create-"+name+".json"),
//		Fingerprint:    fingerprint,
//	})
//
// # Output
//
// Each phase prints a line when it starts and one when it ends, with its duration, and the
// workflow ends with its total:
//
//	▶ CreateBootstrapCluster
//	✓ CreateBootstrapCluster (4.2s)
//	○ MoveManagement skipped: --kubeconfig names an existing management cluster
//	○ SetupAndValidate already done (checkpoint)
//	✗ InstallComponents failed after 1.3s: ...
//
// # Checkpoints and resume
//
// When a phase fails the runner writes a checkpoint (JSON, written to a temporary file and
// renamed into place, mode 0600) at Options.CheckpointPath: the workflow name, the caller's
// fingerprint of its inputs, the phases that completed, the phase that failed and its error,
// timestamps, and the shared state S. The returned *PhaseError says where the checkpoint is and
// that running the same command again resumes.
//
// The next Run with a checkpoint at that path for the same workflow and fingerprint restores S
// from it, reports the completed phases as already done and starts at the first phase that did
// not complete. A checkpoint for another workflow or other inputs is stale: Run refuses with a
// *StaleCheckpointError that says how to remove it, rather than resume work that was planned for
// different inputs. A successful run removes the checkpoint.
//
// S is therefore saved as JSON: keep what phases record in exported, serialisable fields, and
// keep secrets (key material, kubeconfig bytes) out of it; record file paths instead. Unexported
// fields are not saved, so state computed before Run (or by a phase that a resumed run skips)
// must be rebuilt by the caller. A state that cannot be encoded is left out of the checkpoint
// with a warning; the progress is saved all the same.
//
// # Skipped and always phases
//
// Skip is asked just before a phase would run; a phase it skips is not recorded as completed, so
// a resumed run asks again. A phase with Always set runs even when an earlier phase failed (for
// clean-up such as resuming reconciliation after a move), is never skipped because of a
// checkpoint, and runs with a context that is not cancelled when the workflow's context is, so an
// interrupted run still cleans up; PriorError tells it whether the run is failing.
package workflow
