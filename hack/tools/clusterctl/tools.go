//go:build tools

// Package tools pins the clusterctl command this module builds.
package tools

import _ "sigs.k8s.io/cluster-api/cmd/clusterctl"
