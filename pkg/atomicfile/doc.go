// Package atomicfile writes files that are never seen half-written: the data goes to a temporary
// file in the same directory, which is then renamed over the target. A process that dies
// mid-write leaves the old file (or none), never a truncated one — what pid files, checkpoints,
// certificates and kubeconfigs need.
package atomicfile
