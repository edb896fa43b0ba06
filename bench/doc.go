// Package bench holds Flotilla's benchmarks: whole scenarios on real local clusters, measured in
// the units the issues set targets in. `make bench` runs them once each and pipes the output to
// bench/table, which prints one table of every reported metric next to its target.
//
// Benchmarks here are not timed tests: they never fail on a slow number, they report it.
package bench
