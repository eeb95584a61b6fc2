#!/bin/sh
# Runs the nettrap benchmarks and summarizes them.
#
#   bench/run.sh [RUNS] [extra go test flags...]
#
# The runners of one op (bare, the C floors, nettrap, its ptrace engine alone
# and under a listener above) run back to back, and the
# whole set is repeated RUNS times (default 5) with -count=1 each, so that
# each ratio pairs measurements taken seconds apart and a drifting machine
# load spreads over all runners alike. Prints benchstat's summary and
# Markdown tables of the ratios for docs/performance.md. Needs seccomp user
# notification (Linux 5.0+) and a C compiler (the C floor); run as a user
# allowed to read the memory of its own children (the default). Set
# NETTRAP_BENCH_RUNNERS=all for the variants without SYNC_WAKE_UP.
set -eu
cd "$(dirname "$0")/.."
runs=${1:-5}
[ $# -gt 0 ] && shift
out=$(mktemp "${TMPDIR:-/tmp}/nettrap-bench.XXXXXX")
trap 'rm -f "$out"' EXIT
go test -c -o "$out.test" ./bench/
trap 'rm -f "$out" "$out.test" "$out.round"' EXIT
# A round that fails (a workload that exits non-zero under one runner)
# keeps the figures it measured; what failed is said, and the script
# exits 1 after the tables.
failed=0
i=1
while [ "$i" -le "$runs" ]; do
	echo "run $i/$runs" >&2
	if ! (cd bench && "$out.test" -test.run='^$' -test.bench=. -test.count=1 "$@") >"$out.round" 2>&1; then
		failed=$((failed + 1))
		echo "run $i/$runs failed:" >&2
		grep -v '^Benchmark' "$out.round" >&2 || true
	fi
	grep '^Benchmark\|^goos\|^goarch\|^pkg\|^cpu' "$out.round" >>"$out" || true
	i=$((i + 1))
done
rm -f "$out.round"
echo "## benchstat"
if ! go run golang.org/x/perf/cmd/benchstat@latest "$out"; then
	echo "(benchstat unavailable; raw output follows)"
	cat "$out"
fi
echo
echo "## ratios"
go run ./bench/internal/table <"$out"
if [ "$failed" -gt 0 ]; then
	echo "$failed of $runs runs failed (see above)" >&2
	exit 1
fi
