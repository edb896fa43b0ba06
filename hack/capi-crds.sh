#!/usr/bin/env bash
# Copies Cluster API's CRDs into config/crd/capi/ and its admission webhook manifest into
# config/webhook/capi/, from the sigs.k8s.io/cluster-api version pinned in go.mod. Each CRD is
# reduced to its storage version (v1beta2) because Flotilla runs no conversion webhook; see
# hack/capicrds for the details. Run by `make generate`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

go mod download sigs.k8s.io/cluster-api
dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)

go run ./hack/capicrds -capi-dir "$dir" -capi-version "$version" \
	-crd-out config/crd/capi -webhook-out config/webhook/capi
