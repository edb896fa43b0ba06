// Command table reads `go test -bench` output on stdin, passes it through, and prints the custom
// metrics of every benchmark as one table with the target each issue names.
package main
