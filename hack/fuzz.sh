#!/usr/bin/env bash
# make fuzz: runs every Go fuzz target of the module (each `func FuzzXxx(f *testing.F)` in a
# _test.go file of a package `go list ./...` lists, found anew on every run) for FUZZTIME each, on
# one worker (-parallel 1: the machine is shared), then prints each target's executions, the
# total, and the crashes. A crash leaves its input in the package's testdata/fuzz/<target>/ (add
# it to the seed corpus once fixed) and makes the run fail.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${FUZZTIME:-150s}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

targets=()
while read -r pkg dir; do
	for f in "$dir"/*_test.go; do
		[ -e "$f" ] || continue
		while read -r name; do
			targets+=("$pkg $name")
		done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' "$f")
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)

if [ ${#targets[@]} -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
echo "Fuzzing ${#targets[@]} targets for $fuzztime each:"
total=0 crashes=0 i=0
results=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	i=$((i + 1))
	out="$log/$i.log"
	status=ok
	# -fuzzminimizetime 0: the budget goes to executions, not to shrinking new corpus entries.
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 0 -parallel 1 "$pkg" >"$out" 2>&1; then
		status=CRASH
		crashes=$((crashes + 1))
		grep -E -- '--- FAIL|Failing input|panic:|_test.go:[0-9]+' "$out" | head -20 >&2 || tail -20 "$out" >&2
	fi
	execs=$(sed -n 's/.*execs: \([0-9]*\) .*/\1/p' "$out" | tail -1)
	execs=${execs:-0}
	total=$((total + execs))
	results+=("$(printf '%-50s %-22s %12s  %s' "$pkg" "$name" "$execs" "$status")")
	echo "  ${results[-1]}"
done
echo
printf '%-50s %-22s %12s  %s\n' PACKAGE TARGET EXECUTIONS RESULT
printf '%s\n' "${results[@]}"
echo "total executions: $total, crashes: $crashes"
[ "$crashes" -eq 0 ]
