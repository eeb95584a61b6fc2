#!/bin/sh
# Runs a timing-sensitive ping test RUNS times (default 80) bare, under
# nettrap, under nettrap --emulate=off and, as root, under the kernel
# floor, the hold's programs (bench/internal/kfloor, -hold) and
# nettrap --engine=kernel,
# alternating, and counts its failures
# (issue 39). One run is a fresh `workload udpping 1`: an unconnected UDP
# send to a peer in the same process, which answers; the test takes its
# start time after the send returned and fails when the answer was read
# no later than that (a round trip of zero or less), as a gossip
# library's ping test does. Everything is on loopback.
#
#   bench/pingruns.sh [RUNS]
set -eu
cd "$(dirname "$0")/.."
runs=${1:-80}
work=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-pingruns.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
go build -o "$work/workload" ./bench/internal/workload
go build -o "$work/nettrap" ./cmd/nettrap
runners="bare nettrap continue"
if [ "$(id -u)" = 0 ]; then
	go build -o "$work/kfloor" ./bench/internal/kfloor
	runners="$runners kernel kernel-hold nettrap-kernel"
else
	echo "pingruns: not root: no kernel floor runs" >&2
fi

# ping RUNNER: one run; prints 1 when the test failed, 0 when it passed.
ping() {
	case $1 in
	bare) set -- ;;
	nettrap) set -- "$work/nettrap" -- ;;
	continue) set -- "$work/nettrap" --emulate=off -- ;;
	kernel) set -- "$work/kfloor" -f -- ;;
	kernel-hold) set -- "$work/kfloor" -f -hold -- ;;
	nettrap-kernel) set -- "$work/nettrap" --engine=kernel -- ;;
	esac
	out=$("$@" "$work/workload" udpping 1) || { echo "pingruns: a run failed: $out" >&2; exit 1; }
	case $out in
	*'"answer_first":1'*) echo 1 ;;
	*'"answer_first":0'*) echo 0 ;;
	*) echo "pingruns: no ping figures in: $out" >&2; exit 1 ;;
	esac
}

: >"$work/results"
i=1
while [ "$i" -le "$runs" ]; do
	for r in $runners; do
		echo "$r $(ping "$r")" >>"$work/results"
	done
	i=$((i + 1))
done
awk -v runs="$runs" '
	{ n[$1]++; f[$1] += $2; if (!seen[$1]++) order[++k] = $1 }
	END {
		for (i = 1; i <= k; i++) {
			r = order[i]
			printf "%-14s failed %d of %d runs", r, f[r], n[r]
			if (r != "bare") printf " (bare: %d)", f["bare"]
			printf "\n"
		}
	}' "$work/results"
