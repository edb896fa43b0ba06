#!/usr/bin/env bash
# make quickstart: creates the local management cluster `mgmt` (kubeconfig ./mgmt/mgmt.kubeconfig)
# and, from it, the workload cluster `w1` (kubeconfig ./w1/w1.kubeconfig). Re-running it keeps
# what already runs and resumes a create that failed half-way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
flotilla=bin/flotilla

# running NAME KUBECONFIG: true when the cluster NAME is listed by the management cluster.
running() {
	[ -f "$2" ] && $flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig -o json 2>/dev/null | grep -q "\"name\": \"$1\""
}

if running mgmt mgmt/mgmt.kubeconfig; then
	echo "Management cluster mgmt already runs (delete it with: bin/flotilla delete cluster mgmt --force)."
else
	mkdir -p mgmt
	[ -f mgmt/mgmt.yaml ] || $flotilla generate clusterconfig mgmt --provider local --management > mgmt/mgmt.yaml
	$flotilla create cluster -f mgmt/mgmt.yaml
fi

echo
if running w1 w1/w1.kubeconfig; then
	echo "Workload cluster w1 already runs."
else
	mkdir -p w1
	[ -f w1/w1.yaml ] || $flotilla generate clusterconfig w1 --provider local > w1/w1.yaml
	$flotilla create cluster -f w1/w1.yaml --kubeconfig mgmt/mgmt.kubeconfig
fi

echo
$flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig
echo
$flotilla describe cluster w1 --kubeconfig mgmt/mgmt.kubeconfig
