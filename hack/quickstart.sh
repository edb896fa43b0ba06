#!/usr/bin/env bash
# make quickstart: creates the local management cluster `mgmt` (kubeconfig ./mgmt/mgmt.kubeconfig)
# from a generated spec. Re-running it keeps a running `mgmt` and resumes a failed create.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
flotilla=bin/flotilla

if [ -f mgmt/mgmt.kubeconfig ] && $flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig >/dev/null 2>&1; then
	echo "Management cluster mgmt already runs (delete it with: bin/flotilla delete cluster mgmt)."
else
	mkdir -p mgmt
	[ -f mgmt/mgmt.yaml ] || $flotilla generate clusterconfig mgmt --provider local --management > mgmt/mgmt.yaml
	$flotilla create cluster -f mgmt/mgmt.yaml
fi

echo
$flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig
echo
$flotilla describe cluster mgmt --kubeconfig mgmt/mgmt.kubeconfig
