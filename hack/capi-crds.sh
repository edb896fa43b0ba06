#!/usr/bin/env bash
# Copies Cluster API's CRDs (with those of its in-memory provider, from sigs.k8s.io/cluster-api/test)
# into config/crd/capi/ and its admission webhook manifests into config/webhook/capi/, from the
# versions pinned in go.mod. Each CRD is
# reduced to its storage version (v1beta2) because Flotilla runs no conversion webhook; see
# hack/capicrds for the details. Run by `make generate`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

go mod download sigs.k8s.io/cluster-api sigs.k8s.io/cluster-api/test
dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
testdir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api/test)
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)

go run ./hack/capicrds -capi-dir "$dir" -capi-test-dir "$testdir" -capi-version "$version" \
	-crd-out config/crd/capi -webhook-out config/webhook/capi
