// Package latest holds what the newest of a process's managers set up, for things registered once
// per process that must read that manager's state: the Prometheus collectors on
// controller-runtime's global registry. A manager that replaces a stopped one in the same process
// (tests do that) sets its own, and the collectors read it from then on.
package latest

import "sync/atomic"

// Value is the last value Set; safe for concurrent use.
type Value[T any] struct{ p atomic.Pointer[T] }

// Set makes v the value Get returns.
func (l *Value[T]) Set(v T) { l.p.Store(&v) }

// Get returns the last value Set, and false when nothing was set yet.
func (l *Value[T]) Get() (T, bool) {
	p := l.p.Load()
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}
