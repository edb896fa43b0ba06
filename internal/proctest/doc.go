// Package proctest tells tests about the processes this one started, from /proc (Linux): which
// children it has and what their command lines are, to check that a child was stopped or is
// gone. It is imported only by _test.go files.
package proctest
