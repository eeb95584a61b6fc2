#!/bin/sh
# Weighs this checkout's nettrap against one built from another commit,
# in the same run: the ops issue 19 moved from CONTINUE to the supervisor
# (a unix connect and a unix datagram send by path, a checked
# setsockopt) and two inet ops for scale.
#
#   bench/compare.sh BASE-COMMIT [RUNS]
#
# NETTRAP_COMPARE_OPS names other ops (as NETTRAP_BENCH_OPS does), e.g.
# getppid,tcpconnect,udpsendto for an untrapped call beside two trapped.
#
# Builds nettrap at BASE-COMMIT in a temporary worktree, then runs the
# runners bare, nettrap and nettrap-base back to back, RUNS times (default
# 5), and prints the ratios (x-bare of both, and nettrap-base over nettrap).
set -eu
cd "$(dirname "$0")/.."
base=${1:?usage: bench/compare.sh BASE-COMMIT [RUNS]}
runs=${2:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-compare.XXXXXX")
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/src" "$base" >/dev/null
(cd "$tmp/src" && go build -o "$tmp/nettrap-base" ./cmd/nettrap)
go test -c -o "$tmp/bench.test" ./bench/
i=1
while [ "$i" -le "$runs" ]; do
	echo "run $i/$runs" >&2
	(cd bench && NETTRAP_BENCH_BASE_BIN="$tmp/nettrap-base" \
		NETTRAP_BENCH_RUNNERS=bare,nettrap,nettrap-base \
		NETTRAP_BENCH_OPS=${NETTRAP_COMPARE_OPS:-tcpconnect,udpsendto,unixconnect,unixsendto,pinopt} \
		"$tmp/bench.test" -test.run='^$' -test.bench=. -test.count=1) >>"$tmp/out"
	i=$((i + 1))
done
# Medians per op and runner of ns/op and x-bare, and base over this.
awk '
/^BenchmarkOps\// {
	split($1, p, "/"); op = p[2]; r = p[3]; sub(/-[0-9]+$/, "", r)
	for (i = 3; i < NF; i++) { if ($(i+1) == "ns/op") ns[op, r, ++n[op, r]] = $i; if ($(i+1) == "x-bare") xb[op, r, n[op, r]] = $i }
	ops[op] = 1; rs[r] = 1
}
function median(arr, op, r, k,   v, i, j, t) {
	for (i = 1; i <= k; i++) v[i] = arr[op, r, i]
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}
END {
	printf "| op | bare ns/op | nettrap x-bare | base x-bare | this over base |\n|---|---|---|---|---|\n"
	for (op in ops) {
		b = median(ns, op, "bare", n[op, "bare"]); a = median(ns, op, "nettrap", n[op, "nettrap"]); c = median(ns, op, "nettrap-base", n[op, "nettrap-base"])
		printf "| %s | %.0f | ×%.2f | ×%.2f | ×%.2f |\n", op, b, a / b, c / b, a / c
	}
}' "$tmp/out"
