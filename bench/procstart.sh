#!/bin/sh
# Weighs process starts under this checkout's nettrap against one built
# from another commit, in the same run (issue 35: the tree's Landlock
# domain, and under `nettrap -- go test` one more exec per test binary,
# the nettrap-landlock stub that nests it below the go command's).
#
#   bench/procstart.sh BASE-COMMIT [ROUNDS] [PACKAGES]
#
# Three workloads, each bare, under nettrap-base and under nettrap,
# interleaved ROUNDS times (default 7):
#   exec:   `sh -c` running /bin/true 300 times (fork and exec in the tree)
#   gotest: `go test -count=1 ./...` of a generated module of PACKAGES
#           packages (default 10), one trivial test each: a test binary
#           start per package
#   osexec: `go test -count=1 -short os/exec` (Go's own subprocess suite)
# Prints the median wall time of each and the medians of the paired
# ratios: x-bare of both, and this nettrap over the base.
set -eu
cd "$(dirname "$0")/.."
base=${1:?usage: bench/procstart.sh BASE-COMMIT [ROUNDS] [PACKAGES]}
rounds=${2:-7}
pkgs=${3:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-procstart.XXXXXX")
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; chmod -R u+w "$work"; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" "$base" >/dev/null
(cd "$work/src" && go build -o "$work/nettrap-base" ./cmd/nettrap)
go build -o "$work/nettrap" ./cmd/nettrap
mod="$work/mod"
mkdir -p "$mod"
printf 'module example.com/procstart\n\ngo 1.26\n' >"$mod/go.mod"
i=1
while [ "$i" -le "$pkgs" ]; do
	mkdir -p "$mod/p$i"
	printf 'package p%d\n\nimport "testing"\n\nfunc TestOne(t *testing.T) {}\n' "$i" >"$mod/p$i/p_test.go"
	i=$((i + 1))
done
export GOCACHE="$work/gocache" GOFLAGS=-count=1
(cd "$mod" && go test ./... >/dev/null) # compile once: the rounds start binaries
ms() { s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; echo $(( ($(date +%s%N) - s) / 1000000 )); }
run() { # workload runner
	case $1 in
	exec) shift; ms "$@" sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done' ;;
	gotest) shift; (cd "$mod" && ms "$@" go test ./...) ;;
	osexec) shift; ms "$@" go test -short os/exec ;;
	esac
}
out="$work/times"
r=1
while [ "$r" -le "$rounds" ]; do
	echo "round $r/$rounds" >&2
	for w in exec gotest osexec; do
		echo "$w bare $(run $w env)" >>"$out"
		echo "$w base $(run $w "$work/nettrap-base" --)" >>"$out"
		echo "$w new $(run $w "$work/nettrap" --)" >>"$out"
	done
	r=$((r + 1))
done
awk '
function median(a, k,   i, j, t) {
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ n[$1, $2]++; t[$1, $2, n[$1, $2]] = $3; ws[$1] = 1 }
END {
	printf "%-8s %8s %8s %8s %10s %10s %10s\n", "workload", "bare ms", "base ms", "new ms", "base/bare", "new/bare", "new/base"
	for (w in ws) {
		k = n[w, "bare"]
		for (i = 1; i <= k; i++) { b[i] = t[w, "bare", i]; o[i] = t[w, "base", i]; m[i] = t[w, "new", i]
			rb[i] = o[i] / b[i]; rn[i] = m[i] / b[i]; rr[i] = m[i] / o[i] }
		printf "%-8s %8d %8d %8d %10.2f %10.2f %10.2f\n", w, median(b, k), median(o, k), median(m, k), median(rb, k), median(rn, k), median(rr, k)
	}
}' "$out"
