package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile is the lock of a RunDir, under RunDir.
const lockFile = ".lock"

// LockPath returns the file Lock locks.
func (k Keeper) LockPath() string { return filepath.Join(k.RunDir, lockFile) }

// Lock takes the exclusive lock of RunDir, creating RunDir when missing, and waits for another
// holder (a goroutine or program working on the same processes) until ctx ends. Ensure, Keep
// and Stop run under it whenever more than one program may act on RunDir: the program that
// declares a process and the supervisor daemon that restarts it.
func (k Keeper) Lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(k.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", k.RunDir, err)
	}
	unlock, ok, err := k.lock(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("locking %s: the directory was removed", k.RunDir)
	}
	return unlock, err
}

// LockExisting is Lock for a RunDir that must exist: it creates nothing, and returns ok false
// when RunDir does not exist or was removed while it waited (a deleted cluster's directory,
// whose processes must stay stopped).
func (k Keeper) LockExisting(ctx context.Context) (unlock func(), ok bool, err error) {
	return k.lock(ctx)
}

// lock takes the lock file's flock. The lock file may be removed with its directory by the holder
// (Delete removes a control plane's whole directory): after taking the lock, the file must still
// be the one at LockPath, or the lock protects nothing and is taken again.
func (k Keeper) lock(ctx context.Context) (func(), bool, error) {
	path := k.LockPath()
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("opening %s: %w", path, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			if sameFile(f, path) {
				return func() { _ = f.Close() }, true, nil // closing releases the lock
			}
			_ = f.Close() // removed while we waited: lock what is there now, if anything
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			_ = f.Close()
			return nil, false, fmt.Errorf("locking %s: %w", path, err)
		}
		_ = f.Close()
		select {
		case <-ctx.Done():
			return nil, false, fmt.Errorf("waiting for another operation on %s to finish: %w", k.RunDir, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// sameFile reports whether the open file f is the file at path.
func sameFile(f *os.File, path string) bool {
	open, err := f.Stat()
	if err != nil {
		return false
	}
	current, err := os.Stat(path)
	return err == nil && os.SameFile(open, current)
}
