#!/bin/sh
# Measures `nettrap -- go test ./...` with Go's test cache (issue 12): the
# second run of a module whose tests all passed, bare and under nettrap,
# in the same run, interleaved.
#
#   bench/gocache.sh [ROUNDS] [PACKAGES] [make]
#
# With "make" both runs go through a Makefile (`make -s test`, whose
# recipe is `go test ./...`): bare, and as `nettrap -- make -s test`.
#
# The fixture is a generated module of PACKAGES packages (default 10),
# each with a few tests (one listens and dials on loopback, nothing else
# uses the network), built with a private GOCACHE. After one warm-up run
# of each (bare, then confined: the confined results are stored under
# their own key), ROUNDS rounds (default 7) time a bare second run, then
# a confined one. Prints the medians and the median of the paired ratios
# (goal: nettrap ≤ ×1.5 of bare). Needs seccomp user notification.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-7}
pkgs=${2:-10}
via=${3:-go}
work=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-gocache.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
go build -o "$work/nettrap" ./cmd/nettrap
mod="$work/mod"
mkdir -p "$mod"
printf 'module example.com/gocachebench\n\ngo 1.26\n' >"$mod/go.mod"
i=1
while [ "$i" -le "$pkgs" ]; do
	mkdir -p "$mod/p$i"
	# The integration fixture's clean tests (a loopback listen and dial,
	# a pure one), and a parallel group.
	sed "s/^package clean/package p$i/" integration/testdata/run/clean/clean_test.go >"$mod/p$i/clean_test.go"
	cat >"$mod/p$i/par_test.go" <<EOT
package p$i

import "testing"

func TestParallel(t *testing.T) {
	for _, n := range []string{"a", "b", "c"} {
		t.Run(n, func(t *testing.T) { t.Parallel() })
	}
}
EOT
	i=$((i + 1))
done
printf 'test:\n\tgo test $(PKGS)\n' >"$mod/Makefile"
export GOCACHE="$work/cache" GOFLAGS= GOPROXY=off GOTOOLCHAIN=local GOWORK=off
cd "$mod"
now() { date +%s%N; }
# run LABEL CMD...: runs CMD quietly, checks that every package came from
# the cache, prints the wall time in ms.
run() {
	label=$1
	shift
	t0=$(now)
	out=$("$@" 2>&1) || { echo "$label failed:" >&2; echo "$out" >&2; exit 1; }
	t1=$(now)
	if [ "$label" != warm ] && [ "$(echo "$out" | grep -c '(cached)')" -ne "$pkgs" ]; then
		echo "$label: not every package was cached:" >&2
		echo "$out" >&2
		exit 1
	fi
	echo $(((t1 - t0) / 1000000))
}
# The command, bare: go test ./..., or make -s test PKGS=./...
cmd="go test ./..."
if [ "$via" = make ]; then
	cmd="make -s test PKGS=./..."
fi
run warm $cmd >/dev/null
run warm "$work/nettrap" --summary=off -- $cmd >/dev/null
pairs=""
r=1
while [ "$r" -le "$rounds" ]; do
	b=$(run bare $cmd)
	n=$(run nettrap "$work/nettrap" --summary=off -- $cmd)
	pairs="$pairs $b:$n"
	r=$((r + 1))
done
echo "$pairs" | tr ' ' '\n' | grep . | awk -F: -v pkgs="$pkgs" -v cmd="$cmd" -v machine="nproc $(nproc), kernel $(uname -r)" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ n++; b[n] = $1; t[n] = $2; r[n] = $2 / $1; if (n == 1 || r[n] < lo) lo = r[n]; if (n == 1 || r[n] > hi) hi = r[n] }
END {
	printf "Machine: %s. Second run of %s on %d packages, all (cached); %d interleaved rounds.\n\n", machine, cmd, pkgs, n
	printf "| runner | median wall ms |\n|---|---:|\n"
	printf "| %s (bare) | %d |\n", cmd, median(b, n)
	printf "| nettrap -- %s | %d |\n", cmd, median(t, n)
	printf "\nnettrap ×bare (paired): median %.2f [%.2f–%.2f]; goal ≤ 1.5\n", median(r, n), lo, hi
}'
