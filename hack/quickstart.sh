#!/usr/bin/env bash
# make quickstart: creates the local management cluster `mgmt` (kubeconfig ./mgmt/mgmt.kubeconfig)
# and, from it, the workload cluster `w1` (kubeconfig ./w1/w1.kubeconfig) with one simulated and
# one real node, then installs the curated package hello-flotilla on w1's real node from a local
# registry, where it serves HTTP, and a Helm addon that lands on w1.
# Re-running it keeps what already runs and resumes a create that failed half-way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
flotilla=bin/flotilla

# running NAME KUBECONFIG: true when the cluster NAME is listed by the management cluster.
running() {
	[ -f "$2" ] && $flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig -o json 2>/dev/null | grep -q "\"name\": \"$1\""
}

# After a restart of the machine (or once every process was killed) mgmt's data is still there:
# bring the fleet back rather than create it again.
if [ -f mgmt/mgmt.kubeconfig ] && ! running mgmt mgmt/mgmt.kubeconfig; then
	$flotilla start
fi

if running mgmt mgmt/mgmt.kubeconfig; then
	echo "Management cluster mgmt already runs (delete it with: bin/flotilla delete cluster mgmt --force)."
else
	mkdir -p mgmt
	[ -f mgmt/mgmt.yaml ] || $flotilla generate clusterconfig mgmt --provider local --management > mgmt/mgmt.yaml
	$flotilla create cluster -f mgmt/mgmt.yaml
fi

echo
# The embedded OCI registry on this machine and the images real nodes pull from it (pause,
# CoreDNS, hello-flotilla's server): before w1, whose real node pulls them as soon as it joins.
$flotilla registry start
$flotilla image build

echo
if running w1 w1/w1.kubeconfig; then
	echo "Workload cluster w1 already runs."
else
	mkdir -p w1
	[ -f w1/w1.yaml ] || $flotilla generate clusterconfig w1 --provider local --workers 1 --real-workers 1 > w1/w1.yaml
	$flotilla create cluster -f w1/w1.yaml --kubeconfig mgmt/mgmt.kubeconfig
fi

echo
# The curated packages: the catalog published to the registry as Helm charts and signed
# bundles, and hello-flotilla installed on w1's real node by the management cluster.
$flotilla registry publish
$flotilla install packagecontroller --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig \
	--registry 127.0.0.1:5001 --repository flotilla --public-key "${FLOTILLA_HOME:-$HOME/.flotilla}/registry/signing-key.pub.pem"
if $flotilla get packages --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig -o json | grep -q '"name": "hello-flotilla"'; then
	echo "Package hello-flotilla is already installed on w1."
else
	$flotilla install package hello-flotilla --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig --wait 3m \
		--set 'nodeSelector.flotilla\.dev/simulated=false'
fi

echo
# A Helm addon: a HelmChartProxy that installs hello-flotilla on every workload cluster.
$flotilla apply -f docs/examples/hello-addon.yaml --kubeconfig mgmt/mgmt.kubeconfig --wait 3m

echo
$flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig
echo
$flotilla get addons --kubeconfig mgmt/mgmt.kubeconfig
echo
$flotilla get packages --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig
echo
$flotilla describe cluster w1 --kubeconfig mgmt/mgmt.kubeconfig
echo
echo "hello-flotilla runs on w1's real node. Try:"
echo "  kubectl --kubeconfig w1/w1.kubeconfig -n flotilla-packages logs deploy/hello-flotilla"
echo "  kubectl --kubeconfig w1/w1.kubeconfig -n flotilla-packages port-forward svc/hello-flotilla 8080:80   # then: curl localhost:8080"
echo "  kubectl --kubeconfig w1/w1.kubeconfig -n flotilla-packages exec deploy/hello-flotilla -- /hello-flotilla lookup kubernetes.default"
