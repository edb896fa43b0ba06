// Package killtest runs a manager in a child process of a test, to be killed with SIGKILL in
// the middle of its work, as a crashed manager is: the test binary starts itself again with
// Role set, and its TestMain runs the manager instead of the tests (Child). The child reads
// its configs (kubeconfigs) and settings from the environment the test gave it; HangWrites
// makes its Helm actions stop at a chosen point until the process dies. It is imported only by
// _test.go files.
package killtest
