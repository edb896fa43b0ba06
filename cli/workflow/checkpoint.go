package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Checkpoint is what a failed run leaves behind so that the next run can resume.
type Checkpoint struct {
	// Workflow is the name of the workflow that wrote the checkpoint.
	Workflow string `json:"workflow"`
	// Fingerprint identifies the inputs of the run that wrote it (see Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// Completed lists, in order, the phases that completed. Skipped phases are not listed.
	Completed []string `json:"completed"`
	// Failed is the phase that failed and why.
	Failed *Failure `json:"failed,omitempty"`
	// StartedAt is when the first attempt started.
	StartedAt time.Time `json:"startedAt"`
	// UpdatedAt is when the checkpoint was last written.
	UpdatedAt time.Time `json:"updatedAt"`
	// State is the workflow's shared state as it was when the run stopped.
	State json.RawMessage `json:"state,omitempty"`
}

// Failure records a failed phase.
type Failure struct {
	// Phase is the name of the phase that failed.
	Phase string `json:"phase"`
	// Error is the error text.
	Error string `json:"error"`
	// At is when the phase failed.
	At time.Time `json:"at"`
}

// completed reports whether the phase named name completed.
func (c *Checkpoint) completed(name string) bool {
	for _, done := range c.Completed {
		if done == name {
			return true
		}
	}
	return false
}

// Fingerprint returns a stable digest of the inputs of a run (such as the spec file's bytes and
// the flags that change what the workflow does), for Options.Fingerprint. Inputs are encoded as
// JSON, so use values whose encoding is stable: structs, strings, byte slices.
func Fingerprint(inputs ...any) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for i, in := range inputs {
		if err := enc.Encode(in); err != nil {
			return "", fmt.Errorf("encoding fingerprint input %d: %w", i, err)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// ReadCheckpoint reads the checkpoint at path. It returns (nil, nil) when there is none.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the checkpoint path is the caller's to choose
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, &StaleCheckpointError{
			Path:   path,
			Reason: fmt.Sprintf("it cannot be read (%v)", err),
		}
	}
	return &cp, nil
}

// writeCheckpoint writes cp to path atomically: to a temporary file in the same directory,
// synced, then renamed over path. Readers see the old checkpoint or the new one, never half.
func writeCheckpoint(path string, cp *Checkpoint) error {
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding checkpoint: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating checkpoint directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("creating checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close() //nolint:errcheck,gosec // the write error is the one to report
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close() //nolint:errcheck,gosec // the sync error is the one to report
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	return nil
}

// removeCheckpoint removes the checkpoint at path, if any.
func removeCheckpoint(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing checkpoint: %w", err)
	}
	return nil
}
