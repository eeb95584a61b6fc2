#!/bin/sh
# Runs quic-go's integrationtests/self bare, under the C floor that
# emulates (bench/internal/cfloor, when a C compiler is there), under
# nettrap and, as root, under the kernel floor and the hold's programs
# (bench/internal/kfloor, -hold) and nettrap --engine=kernel, alternating, and
# reports the wall times as ratios of bare's,
# nettrap's added time over the C floor's, and nettrap's peak RSS (issue
# 10: goal ≤ ×1.10, < 20 MiB). quic-go sends on unconnected UDP sockets,
# so every packet is a trapped sendmsg with GSO control messages.
#
#   bench/quicgo.sh [RUNS] [extra test flags...]
#
# RUNS (default 3) pairs of runs. QUICGO_VERSION picks the module version
# (default below); QUICGO_RUN a -test.run pattern. With kernel features
# withheld from nettrap (NETTRAP_TEST_NO_SYNC_WAKEUP=1, which reaches it
# through the environment), set QUICGO_CFLOOR_FLAGS="-e -n" so that the
# C floor does without SYNC_WAKE_UP too. The module comes from
# the Go module proxy (go mod download); the tests talk over loopback only.
set -eu
cd "$(dirname "$0")/.."
runs=${1:-3}
[ $# -gt 0 ] && shift
version=${QUICGO_VERSION:-v0.65.0}
work=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-quicgo.XXXXXX")
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
go build -o "$work/nettrap" ./cmd/nettrap
# The kernel floor (bench/internal/kfloor, issue 39): loopback passed by
# cgroup BPF programs, nothing sent to user space. Root only.
kfloor=
if [ "$(id -u)" = 0 ]; then
	go build -o "$work/kfloor" ./bench/internal/kfloor && kfloor="$work/kfloor"
else
	echo "quicgo: not root: no kernel floor runs" >&2
fi
cfloor=
if cc=$(command -v cc || command -v gcc); then
	"$cc" -O2 -o "$work/cfloor" bench/internal/cfloor/cfloor.c && cfloor="$work/cfloor"
else
	echo "quicgo: no C compiler: no C floor runs" >&2
fi
src=$(go mod download -json "github.com/quic-go/quic-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "quicgo: cannot download quic-go $version" >&2; exit 1; }
cp -r "$src" "$work/quic-go"
chmod -R u+w "$work/quic-go"
(cd "$work/quic-go" && go mod download && go test -c -o "$work/self.test" ./integrationtests/self)

# now_ns prints the monotonic-enough wall clock in nanoseconds.
now_ns() { date +%s%N; }

# peak PID prints the highest VmHWM (KiB) seen while PID runs.
peak() {
	hwm=0
	# A zombie keeps its status file (State: Z, no VmHWM): stop there.
	while [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; do
		v=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null || true)
		[ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
		sleep 0.1
	done
	echo "$hwm"
}

run() { # run LABEL CMD... : prints "LABEL seconds peak-KiB status"
	label=$1
	shift
	t0=$(now_ns)
	"$@" -test.count=1 ${QUICGO_RUN:+-test.run "$QUICGO_RUN"} >"$work/$label.out" 2>&1 &
	pid=$!
	hwm=$(peak "$pid")
	st=0
	wait "$pid" || st=$?
	t1=$(now_ns)
	if [ "$st" != 0 ]; then
		# Kept past the work directory's removal, and said on stderr.
		keep=$(mktemp "${TMPDIR:-/tmp}/nettrap-quicgo-$label.XXXXXX")
		cp "$work/$label.out" "$keep"
		echo "quicgo: $label exited $st; its output: $keep" >&2
		grep -E '^(--- FAIL|FAIL|panic)|nettrap:' "$keep" | head -20 >&2 || true
	fi
	echo "$label $(( (t1 - t0) / 1000000 )) $hwm $st"
}

cd "$work"
i=1
: >results
while [ "$i" -le "$runs" ]; do
	run bare ./self.test "$@" >>results
	# shellcheck disable=SC2086 # the flags are words
	[ -z "$cfloor" ] || run cfloor ./cfloor ${QUICGO_CFLOOR_FLAGS:--e} ./self.test "$@" >>results
	run nettrap ./nettrap -- ./self.test "$@" >>results
	[ -z "$kfloor" ] || run kernel ./kfloor -f -- ./self.test "$@" >>results
	[ -z "$kfloor" ] || run kernel-hold ./kfloor -f -hold -- ./self.test "$@" >>results
	[ -z "$kfloor" ] || run nettrap-kernel ./nettrap --engine=kernel -- ./self.test "$@" >>results
	i=$((i + 1))
done
cat results
awk '
	$4 != 0 { bad = bad " " $1 "(exit " $4 ")" }
	$1 == "bare" { b[++nb] = $2 }
	$1 == "cfloor" { c[++nc] = $2 }
	$1 == "nettrap" { n[++nn] = $2; if ($3 > rss) rss = $3 }
	$1 == "kernel" { k[++nk] = $2 }
	$1 == "kernel-hold" { kh[++nkh] = $2 }
	$1 == "nettrap-kernel" { ne[++nne] = $2; if ($3 > krss) krss = $3 }
	function sort(a, m,   i, j, t) {
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	}
	function show(label, a, m) {
		sort(a, m)
		printf "%s: median %.2f [%.2f–%.2f] over %d rounds\n", label, a[int((m + 1) / 2)], a[1], a[m], m
	}
	END {
		m = nn < nb ? nn : nb
		for (i = 1; i <= m; i++) r[i] = n[i] / b[i]
		show("quic-go integrationtests/self, nettrap wall × bare", r, m)
		if (nc == m) {
			for (i = 1; i <= m; i++) { f[i] = c[i] / b[i]; a[i] = c[i] > b[i] ? (n[i] - b[i]) / (c[i] - b[i]) : 0; x[i] = n[i] / c[i] }
			show("C floor (emulating) wall × bare", f, m)
			show("nettrap wall × C floor wall", x, m)
			show("nettrap added time / C floor added time", a, m)
		}
		if (nk == m) {
			for (i = 1; i <= m; i++) { kb[i] = k[i] / b[i]; kn[i] = k[i] / n[i] }
			show("kernel floor wall × bare", kb, m)
			show("kernel floor wall × nettrap wall", kn, m)
		}
		if (nkh == m) {
			for (i = 1; i <= m; i++) khb[i] = kh[i] / b[i]
			show("hold programs (kfloor -hold) wall × bare", khb, m)
		}
		if (nne == m) {
			for (i = 1; i <= m; i++) { neb[i] = ne[i] / b[i]; nen[i] = ne[i] / n[i] }
			show("nettrap --engine=kernel wall × bare", neb, m)
			show("nettrap --engine=kernel wall × nettrap wall", nen, m)
			printf "nettrap --engine=kernel peak RSS %.1f MiB\n", krss / 1024
		}
		printf "nettrap peak RSS %.1f MiB\n", rss / 1024
		if (bad != "") printf "runs that failed:%s (see the outputs)\n", bad
	}' results
