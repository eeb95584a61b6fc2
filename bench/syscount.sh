#!/usr/bin/env bash
# Counts the syscalls nettrap's own process makes per trapped call (issue
# 20: a restructuring of the supervisor must leave them as they were), for
# one or more nettrap binaries or git revisions, side by side.
#
#   bench/syscount.sh [-n N] [-e ENGINES] NETTRAP-BINARY|REVISION...
#
#   -n N        trapped calls per measurement (default 1000)
#   -e ENGINES  comma-separated NETTRAP_ENGINE values (default notify;
#               notify,ptrace adds the ptrace engine)
#
# A REVISION (anything that is not an executable file) is built with
# `go build ./cmd/nettrap` in a temporary `git worktree`, removed at the
# end. An executable may be a script that execs nettrap with flags (e.g.
# `exec nettrap --emulate=off "$@"`: its call path differs, as it should). The victim (bench/internal/workload count) is built from this checkout,
# the same for every binary. Three ops, one trapped call each:
#
#   connect    an allowed loopback TCP connect, to the victim's own
#              listener (nettrap emulates it)
#   udpsendto  a UDP sendto to a loopback peer of the victim's own
#              (nettrap emulates it)
#   denied     a connect to 203.0.113.7:443 (TEST-NET-3), which nettrap
#              denies (EPERM); nettrap then exits 1, as it does whenever
#              it denied something
#
# Method: `nettrap -- syscount OP N DIR` runs in a private network
# namespace (`unshare -n` as root, else `unshare -rn`; lo is brought up,
# there is no other interface, so nothing can leave the machine whatever
# happens). The victim sets up and makes 200 warm-up calls, then says
# "ready" on a FIFO; the script attaches `strace -f -c` to every thread of
# the nettrap process (-p with -f takes every thread, and follows the
# threads it makes), waits until the kernel shows strace as the tracer of
# every thread, and lets the victim make its N calls; on "done" it stops
# strace (SIGINT: it detaches and writes its summary), and only then lets
# the victim exit. The counts are therefore those of N calls, without
# nettrap's start, the victim's start-up and warm-up, or the exit. The
# nettrap-reaper child (an idle process that blocks on a pipe) and the
# victim are not counted.
#
# Printed per op: a Markdown table of syscalls per call for each binary
# (counts / N, two decimals; "–" below 0.005), the call path first; then
# whether the call path is the same for every binary: each count within
# 0.25 per call of the first binary's (so that a syscall added to every
# other call shows, and the odd wake-up at the window's edges does not).
# The call path is every syscall but the Go runtime's own (futex,
# nanosleep, epoll_pwait, tgkill, getpid, rt_sigreturn, sched_yield, mmap,
# madvise, ...: scheduling, sysmon, preemption, the netpoller's waits; not
# epoll_ctl, which nettrap's own os.File opens make), listed after it
# with "(runtime)": those follow the time the calls take, and under strace
# each of nettrap's syscalls stops twice, so they are far from what they
# are without it, and differ from run to run. The call path counts are
# whole numbers (the warm-up has filled the pools and caches) but for a
# few hundredths: the netpoller's eventfd read and write, which the
# summary cannot tell from nettrap's own, and the calls at the window's
# edges.
#
# Needs root (or unprivileged user namespaces), seccomp user notification
# and strace: as root on Debian/Ubuntu, a missing strace is installed with
# apt-get. Takes about half a minute per binary and engine (a denied
# connect is ~30 syscalls of nettrap's, each stopped by strace).
set -euo pipefail

runtime_syscalls=" futex nanosleep epoll_pwait epoll_wait tgkill getpid gettid \
rt_sigreturn rt_sigprocmask rt_sigaction sigaltstack sched_yield \
sched_getaffinity mmap munmap mprotect madvise clone clone3 set_robust_list \
rseq restart_syscall "

usage() {
	sed -n '6,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

n=1000
engines=notify
while getopts n:e:h opt; do
	case $opt in
	n) n=$OPTARG ;;
	e) engines=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
case $n in '' | 0 | *[!0-9]*) echo "syscount: bad -n $n" >&2; exit 2 ;; esac

# await WORD SECONDS: reads WORD from fd 3 while nettrap ($np) runs.
await() {
	local line
	for _ in $(seq "$2"); do
		if read -r -t 1 -u 3 line; then
			[ "$line" = "$1" ]
			return
		fi
		kill -0 "$np" 2>/dev/null || return 1
	done
	return 1
}

# measure BIN ENGINE OP N DIR: one measurement, in the current (private)
# network namespace; the strace summary goes to DIR/strace. Sets np, the
# nettrap's pid.
measure() {
	local bin=$1 engine=$2 op=$3 calls=$4 dir=$5 sp ok t rc
	rm -f "$dir/in" "$dir/out"
	mkfifo "$dir/in" "$dir/out"
	# Both ends open read-write: neither open blocks, and the victim's
	# opens find a peer at once.
	exec 3<>"$dir/out" 4<>"$dir/in"
	NETTRAP_ENGINE=$engine "$bin" -- "$dir/victim" count "$op" "$calls" "$dir" \
		>"$dir/nettrap.out" 2>"$dir/nettrap.err" &
	np=$!
	if ! await ready 120; then
		echo "syscount: $op under $bin did not get ready:" >&2
		tail -5 "$dir/nettrap.err" >&2
		kill "$np" 2>/dev/null || true
		return 1
	fi
	strace -f -c -o "$dir/strace" -p "$np" 2>"$dir/strace.err" &
	sp=$!
	ok=0
	for _ in $(seq 200); do
		ok=1
		for t in /proc/"$np"/task/*; do
			[ "$(awk '/^TracerPid:/ { print $2 }' "$t/status" 2>/dev/null)" = "$sp" ] || ok=0
		done
		[ "$ok" = 1 ] && break
		sleep 0.05
	done
	if [ "$ok" != 1 ]; then
		echo "syscount: strace did not attach to every thread of $np:" >&2
		cat "$dir/strace.err" >&2
		kill "$sp" "$np" 2>/dev/null || true
		return 1
	fi
	echo go >&4
	if ! await done 600; then
		echo "syscount: $op under $bin did not finish:" >&2
		tail -5 "$dir/nettrap.err" >&2
		kill "$sp" "$np" 2>/dev/null || true
		return 1
	fi
	kill -INT "$sp"
	wait "$sp" || true
	echo exit >&4
	rc=0
	wait "$np" || rc=$?
	exec 3>&- 4>&-
	# nettrap exits 1 after denying a call, as it should.
	if [ "$rc" != 0 ] && ! { [ "$op" = denied ] && [ "$rc" = 1 ]; }; then
		echo "syscount: nettrap exited $rc on $op:" >&2
		tail -5 "$dir/nettrap.err" >&2
		return 1
	fi
	if [ "$op" = denied ] && ! grep -q 'blocked: connect tcp 203.0.113.7:443' "$dir/nettrap.err"; then
		echo "syscount: nettrap did not report the denied connect" >&2
		return 1
	fi
}

# Inside the namespace: NETTRAP_SYSCOUNT_INNER names the work directory;
# the arguments are LABEL=BINARY pairs. Prints "label engine op syscall
# calls" lines for every count.
if [ -n "${NETTRAP_SYSCOUNT_INNER:-}" ]; then
	dir=$NETTRAP_SYSCOUNT_INNER
	ip link set lo up 2>/dev/null || ip link set dev lo up
	for engine in ${engines//,/ }; do
		for op in connect udpsendto denied; do
			for pair in "$@"; do
				label=${pair%%=*}
				bin=${pair#*=}
				echo "measuring $op, $label, engine $engine" >&2
				measure "$bin" "$engine" "$op" "$n" "$dir"
				# strace -c: % time, seconds, usecs/call, calls, [errors,] syscall.
				awk -v l="$label" -v e="$engine" -v o="$op" \
					'NF >= 5 && $1 ~ /^[0-9.]+$/ && $NF != "total" { print l, e, o, $NF, $4 }' \
					"$dir/strace"
			done
		done
	done
	exit 0
fi

cd "$(dirname "$0")/.."
if ! command -v strace >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "syscount: installing strace" >&2
		apt-get install -y -qq strace >&2 || { apt-get update -qq >&2 && apt-get install -y -qq strace >&2; }
	else
		echo "syscount: strace is missing (apt-get install strace, as root)" >&2
		exit 1
	fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nettrap-syscount.XXXXXX")
worktrees=()
cleanup() {
	for w in ${worktrees[@]+"${worktrees[@]}"}; do
		git worktree remove --force "$w" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/victim" ./bench/internal/workload

pairs=()
i=0
for arg in "$@"; do
	i=$((i + 1))
	if [ -f "$arg" ] && [ -x "$arg" ]; then
		pairs+=("$(basename "$arg")=$(realpath "$arg")")
		continue
	fi
	rev=$(git rev-parse --short "$arg^{commit}")
	echo "syscount: building nettrap at $arg ($rev)" >&2
	git worktree add -q --detach "$tmp/src$i" "$rev"
	worktrees+=("$tmp/src$i")
	(cd "$tmp/src$i" && go build -o "$tmp/nettrap$i" ./cmd/nettrap)
	git worktree remove --force "$tmp/src$i" >/dev/null
	label=$arg@$rev
	[ "$arg" = "$rev" ] && label=$rev
	pairs+=("$label=$tmp/nettrap$i")
done
labels=()
for p in "${pairs[@]}"; do labels+=("${p%%=*}"); done

if [ "$(id -u)" = 0 ]; then ns=(unshare -n); else ns=(unshare -rn); fi
NETTRAP_SYSCOUNT_INNER=$tmp "${ns[@]}" "$BASH" "$0" -n "$n" -e "$engines" "${pairs[@]}" >"$tmp/counts"

echo "# nettrap's syscalls per trapped call ($n calls each, $(date -u +%Y-%m-%d), $(uname -r))"
awk -v n="$n" -v rt="$runtime_syscalls" -v labels="${labels[*]}" '
BEGIN { nl = split(labels, lab, " ") }
{ key = $2 SUBSEP $3; if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
  c[$2, $3, $4, $1] += $5; sys[$2, $3, $4] = 1 }
function cell(v) { return v / n < 0.005 ? "–" : sprintf("%.2f", v / n) }
END {
	for (k = 1; k <= nk; k++) {
		split(order[k], eo, SUBSEP); e = eo[1]; o = eo[2]
		printf "\n## %s, engine %s\n\n| syscall |", o, e
		for (i = 1; i <= nl; i++) printf " %s |", lab[i]
		printf "\n|---|"
		for (i = 1; i <= nl; i++) printf "---:|"
		printf "\n"
		same = 1; diffs = ""
		for (pass = 1; pass <= 2; pass++) {
			# The syscalls of this op and pass, sorted by name.
			m = 0
			for (s3 in sys) {
				split(s3, p, SUBSEP)
				if (p[1] != e || p[2] != o) continue
				isrt = index(rt, " " p[3] " ") > 0
				if ((pass == 1) == isrt) continue
				names[++m] = p[3]
			}
			for (i = 2; i <= m; i++) { v = names[i]; for (j = i - 1; j >= 1 && names[j] > v; j--) names[j + 1] = names[j]; names[j + 1] = v }
			for (j = 1; j <= m; j++) {
				s = names[j]; shown = 0; line = ""
				for (i = 1; i <= nl; i++) {
					v = c[e, o, s, lab[i]] + 0
					if (v / n >= 0.005) shown = 1
					line = line " " cell(v) " |"
					d = (v - c[e, o, s, lab[1]]) / n
					if (pass == 1 && (d >= 0.25 || d <= -0.25)) { same = 0; diffs = diffs " " s }
				}
				if (shown) printf "| %s%s |%s\n", s, pass == 2 ? " (runtime)" : "", line
			}
			delete names
		}
		if (nl > 1) printf "\ncall path (every syscall but the runtime ones, per call within 0.25): %s\n", same ? "identical" : "DIFFERENT:" diffs
	}
}' "$tmp/counts"
