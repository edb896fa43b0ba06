// Package tether starts child processes that must not outlive this one: the kernel kills them
// (SIGKILL) when this process dies, however it dies.
//
// Linux sends that signal (PR_SET_PDEATHSIG, SysProcAttr.Pdeathsig) when the thread that forked
// the child ends, not when the process does. A Go program ends threads while it runs: a
// goroutine that locks its thread and returns without unlocking it has the thread discarded,
// which Flotilla does on purpose to leave threads moved into other namespaces
// (process.InThread). A child forked earlier by that thread, from any goroutine, would be killed
// then. Start therefore forks every child from one thread kept for the life of the process.
//
// Elsewhere than on Linux, Start only starts the child: it ends when it notices this process
// has gone (a pipe from this process that closes, for example).
package tether
