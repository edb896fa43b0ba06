//go:build tools

// Package tools pins controller-gen, which generates deepcopy code, CRDs and RBAC.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
