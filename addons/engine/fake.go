package engine

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/client-go/rest"
)

// Fake is an in-memory Engine for tests of the reconcilers' logic: releases are kept per
// (cluster host, namespace, name). Set Err to make every call fail with it, or InstallErr to make
// installs and upgrades fail with it. It is safe for concurrent use.
type Fake struct {
	mu       sync.Mutex
	releases map[fakeKey]*fakeRelease

	// Err fails every call when set.
	Err error
	// InstallErr fails InstallOrUpgrade when set.
	InstallErr error

	// installErrs fail InstallOrUpgrade for one cluster host; see FailInstalls.
	installErrs map[string]error

	// Writes counts the calls that changed a release (install, upgrade, uninstall, rollback).
	Writes int
}

type fakeKey struct{ host, namespace, name string }

type fakeRelease struct {
	release  Release
	revision int
	history  []Release
}

var _ Engine = &Fake{}

// SetErrors sets Err and InstallErr under the lock.
func (f *Fake) SetErrors(err, installErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Err, f.InstallErr = err, installErr
}

// FailInstalls makes InstallOrUpgrade fail with err for the cluster at host; a nil err stops it.
func (f *Fake) FailInstalls(host string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.installErrs == nil {
		f.installErrs = map[string]error{}
	}
	f.installErrs[host] = err
}

// WriteCount returns Writes under the lock.
func (f *Fake) WriteCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Writes
}

// Release returns the release installed as namespace/name in the cluster at host.
func (f *Fake) Release(host, namespace, name string) (Release, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.releases[fakeKey{host, namespace, name}]
	if !ok {
		return Release{}, 0, false
	}
	return r.release, r.revision, true
}

// InstallOrUpgrade implements Engine.
func (f *Fake) InstallOrUpgrade(_ context.Context, cfg *rest.Config, r Release) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return Result{}, f.Err
	}
	if f.InstallErr != nil {
		return Result{}, f.InstallErr
	}
	if err := f.installErrs[cfg.Host]; err != nil {
		return Result{}, err
	}
	if f.releases == nil {
		f.releases = map[fakeKey]*fakeRelease{}
	}
	k := fakeKey{cfg.Host, r.Namespace, r.Name}
	cur, ok := f.releases[k]
	version := r.Chart.Version
	if version == "" {
		version = "1.0.0"
	}
	switch {
	case !ok:
		f.releases[k] = &fakeRelease{release: r, revision: 1, history: []Release{r}}
		f.Writes++
		return Result{Action: Installed, Revision: 1, Status: "deployed", ChartVersion: version}, nil
	case cur.release.Chart == r.Chart && reflect.DeepEqual(cur.release.Values, r.Values):
		return Result{Action: Unchanged, Revision: cur.revision, Status: "deployed", ChartVersion: version}, nil
	default:
		cur.release = r
		cur.revision++
		cur.history = append(cur.history, r)
		f.Writes++
		return Result{Action: Upgraded, Revision: cur.revision, Status: "deployed", ChartVersion: version}, nil
	}
}

// Uninstall implements Engine.
func (f *Fake) Uninstall(_ context.Context, cfg *rest.Config, name, namespace string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	k := fakeKey{cfg.Host, namespace, name}
	if _, ok := f.releases[k]; ok {
		delete(f.releases, k)
		f.Writes++
	}
	return nil
}

// Get implements Engine.
func (f *Fake) Get(_ context.Context, cfg *rest.Config, name, namespace string) (*InstalledRelease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	r, ok := f.releases[fakeKey{cfg.Host, namespace, name}]
	if !ok {
		return nil, fmt.Errorf("release %s/%s: %w", namespace, name, ErrReleaseNotFound)
	}
	version := r.release.Chart.Version
	if version == "" {
		version = "1.0.0"
	}
	return &InstalledRelease{Revision: r.revision, Status: "deployed", ChartVersion: version}, nil
}

// Diff implements Engine: it says which of chart and values would change.
func (f *Fake) Diff(_ context.Context, cfg *rest.Config, r Release) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return "", f.Err
	}
	cur, ok := f.releases[fakeKey{cfg.Host, r.Namespace, r.Name}]
	switch {
	case !ok:
		return fmt.Sprintf("+ release %s/%s (chart %s %s)\n", r.Namespace, r.Name, r.Chart.Name, r.Chart.Version), nil
	case cur.release.Chart != r.Chart:
		return fmt.Sprintf("- chart %s %s\n+ chart %s %s\n", cur.release.Chart.Name, cur.release.Chart.Version, r.Chart.Name, r.Chart.Version), nil
	case !reflect.DeepEqual(cur.release.Values, r.Values):
		return fmt.Sprintf("- values %v\n+ values %v\n", cur.release.Values, r.Values), nil
	}
	return "", nil
}

// Rollback implements Engine: it reinstalls the release of revision as a new revision.
func (f *Fake) Rollback(_ context.Context, cfg *rest.Config, name, namespace string, revision int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return f.Err
	}
	cur, ok := f.releases[fakeKey{cfg.Host, namespace, name}]
	if !ok {
		return fmt.Errorf("release %s/%s: %w", namespace, name, ErrReleaseNotFound)
	}
	if revision < 1 || revision > len(cur.history) {
		return fmt.Errorf("release %s/%s has no revision %d", namespace, name, revision)
	}
	cur.release = cur.history[revision-1]
	cur.revision++
	cur.history = append(cur.history, cur.release)
	f.Writes++
	return nil
}
