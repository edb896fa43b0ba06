#!/usr/bin/env bash
# Builds the control plane binaries Flotilla runs (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd, kwok) from source through the Go module proxy into a per-machine cache:
#
#   ${FLOTILLA_BIN_CACHE:-$HOME/.cache/flotilla/bin}/<k8s-version>/
#
# Usage: hack/build-controlplane.sh [v1.36.3 | v1.35.4]...   (default: every supported version)
# A version whose binaries are all present is skipped, so re-running is cheap.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${FLOTILLA_BIN_CACHE:-$HOME/.cache/flotilla/bin}
supported=(v1.36.3 v1.35.4)
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${supported[@]}")

# progress reads `go build -v` output (one package per line) and prints a line every 200 packages.
progress() {
	awk -v what="$1" '{n++; if (n % 200 == 0) {printf "  %s: %d packages compiled\n", what, n; fflush()}} END {printf "  %s: %d packages compiled, linking done\n", what, n}'
}

build() { # build <what> <module dir> <out dir> [ldflags] <package>...
	local what=$1 dir=$2 out=$3 ldflags=$4
	shift 4
	local tmp
	tmp=$(mktemp -d "$out/.build.XXXXXX")
	(cd "$dir" && go build -v -trimpath -ldflags "-s -w $ldflags" -o "$tmp/" "$@") 2>&1 | progress "$what"
	mv "$tmp"/* "$out/"
	rmdir "$tmp"
}

for v in "${versions[@]}"; do
	case " ${supported[*]} " in
	*" $v "*) ;;
	*) echo "unsupported Kubernetes version $v; supported: ${supported[*]}" >&2; exit 1 ;;
	esac
	out=$cache/$v
	mkdir -p "$out"
	minor=${v%.*}
	if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ] && [ -x "$out/kube-scheduler" ]; then
		echo "kubernetes $v: cached in $out"
	else
		echo "kubernetes $v: building kube-apiserver, kube-controller-manager, kube-scheduler (about 10 minutes on 2 cores, once per machine)"
		start=$SECONDS
		major=${v#v}; major=${major%%.*}
		mn=${minor#*.}
		ld="-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$mn"
		ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$mn"
		build "kubernetes $v" "$root/hack/tools/kube-$minor" "$out" "$ld" \
			k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
		echo "kubernetes $v: built in $((SECONDS - start))s"
	fi
	for tool in etcd kwok; do
		if [ -x "$out/$tool" ]; then
			echo "$tool: cached in $out"
			continue
		fi
		echo "$tool: building"
		start=$SECONDS
		case $tool in
		etcd) build etcd "$root/hack/tools/etcd" "$out" "" . ;;
		kwok) build kwok "$root/hack/tools/kwok" "$out" "" sigs.k8s.io/kwok/cmd/kwok ;;
		esac
		echo "$tool: built in $((SECONDS - start))s"
	done
done
