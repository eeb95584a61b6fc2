#!/usr/bin/env bash
# stdsuites.sh — run Go's own test suites (default: net, net/http, os/exec)
# in -short mode twice, bare and with `go test -exec nettrap`, and print the
# tests whose verdict differs, with the "nettrap:" lines that explain them.
#
# Everything runs inside a fresh private network namespace (only `lo`) and
# mount namespace (a fake /etc/resolv.conf naming 192.0.2.53, TEST-NET-1, is
# bind-mounted over the real one) that this script creates itself: nothing
# can leave the machine, and nothing aims at its real nameserver. The script
# refuses to run the suites anywhere else.
#
# Usage:
#   scripts/stdsuites.sh [-o OUTDIR] [-n NETTRAP] [-x "NETTRAP FLAGS"] [PKG...]
#
#   -o OUTDIR  where the JSON streams and the report go (default: a new
#              directory under /tmp)
#   -n FILE    the nettrap binary to use (default: build ./cmd/nettrap)
#   -x FLAGS   extra nettrap flags for -exec, e.g.
#              -x "--allow-unspecified"
#   PKG...     std packages to compare (default: net net/http os/exec)
#
# NETTRAP_* variables in the environment reach nettrap as usual
# (e.g. NETTRAP_ALLOW_UNSPECIFIED=1 scripts/stdsuites.sh).
#
# Needs root (or unprivileged user namespaces: then it maps root), unshare(1)
# and ip(8). Exit status: 0 when no verdict differs, 1 when some do, 2 on
# errors.
set -euo pipefail

die() { echo "stdsuites: $*" >&2; exit 2; }

# ---------------------------------------------------------------- inside --

# inside_checks refuses to go on unless this process is in the fresh network
# namespace the outer half of this script just created: the one-time token
# must match, the namespace must differ from the caller's, and it must hold
# nothing but a loopback interface that nobody has brought up yet.
inside_checks() {
	local out=$1
	[[ -n "${STDSUITES_TOKEN:-}" && -f "$out/.token" ]] ||
		die "refusing to run: not started by stdsuites.sh in a namespace of its own"
	[[ "$(cat "$out/.token")" == "$STDSUITES_TOKEN" ]] ||
		die "refusing to run: token mismatch"
	rm -f "$out/.token" # one use only
	local ns
	ns=$(readlink /proc/self/ns/net)
	[[ "$ns" != "${STDSUITES_PARENT_NETNS:-}" ]] ||
		die "refusing to run: still in the caller's network namespace ($ns)"
	# The bind mount below must not land on the caller's /etc/resolv.conf.
	[[ "$(readlink /proc/self/ns/mnt)" != "${STDSUITES_PARENT_MNTNS:-}" ]] ||
		die "refusing to run: still in the caller's mount namespace"
	# /sys/class/net shows the namespace sysfs was mounted in; ask netlink.
	local links
	links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
	[[ "$links" == "lo " ]] ||
		die "refusing to run: network namespace has interfaces besides lo: $links"
	if ip -o link show lo | grep -q '[<,]UP[,>]'; then
		die "refusing to run: lo is already up, so this namespace is not fresh"
	fi
	ip link set lo up
	mount --bind "$out/resolv.conf" /etc/resolv.conf
	cmp -s "$out/resolv.conf" /etc/resolv.conf ||
		die "refusing to run: fake /etc/resolv.conf not in place"
	[[ -z "$(ip -o route show table main)" ]] ||
		die "refusing to run: namespace has routes besides loopback"
}

run_inside() {
	local out=$1 nt=$2 xflags=$3
	shift 3
	inside_checks "$out"
	echo "stdsuites: in network namespace $(readlink /proc/self/ns/net): links: lo only; resolv.conf: $(tr '\n' ' ' </etc/resolv.conf)"
	cd "$out" # outside any module: std packages only
	export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
	local pkg f
	for pkg in "$@"; do
		f=${pkg//\//_}
		echo "stdsuites: go test -short -count=1 -json $pkg (bare)"
		go test -short -count=1 -json "$pkg" >"$out/$f.bare.json" 2>"$out/$f.bare.stderr" || true
		echo "stdsuites: go test -short -count=1 -json -exec '$nt $xflags' $pkg"
		NETTRAP_AUDIT_LOG="$out/$f.audit.jsonl" \
			go test -short -count=1 -json -exec "$nt $xflags" "$pkg" >"$out/$f.nettrap.json" 2>"$out/$f.nettrap.stderr" || true
	done
	go run "$out/compare.go" "$out" "$@" | tee "$out/report.txt"
	return "${PIPESTATUS[0]}"
}

# --------------------------------------------------------------- outside --

write_compare() {
	cat >"$1/compare.go" <<'EOF'
// compare reads PKG.bare.json and PKG.nettrap.json (go test -json streams)
// and prints per-package counts and the tests whose verdict differs, with
// the nettrap lines printed while each test (or a subtest) ran.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type event struct {
	Action, Package, Test, Output string
}

type run struct {
	verdict map[string]string   // test -> pass/fail/skip
	lines   map[string][]string // test ("" = package) -> nettrap lines
	pkg     string              // package verdict
}

func load(path string) run {
	r := run{verdict: map[string]string{}, lines: map[string][]string{}}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test == "" {
				r.pkg = e.Action
			} else {
				r.verdict[e.Test] = e.Action
			}
		case "output":
			// Under a test the line is indented like t.Error output.
			if strings.HasPrefix(strings.TrimLeft(e.Output, " "), "nettrap: ") {
				r.lines[e.Test] = append(r.lines[e.Test], strings.TrimSpace(e.Output))
			}
		}
	}
	return r
}

func top(t string) string { return strings.SplitN(t, "/", 2)[0] }

func counts(r run, topOnly bool) (n int, c map[string]int) {
	c = map[string]int{}
	for t, v := range r.verdict {
		if topOnly && strings.Contains(t, "/") {
			continue
		}
		n++
		c[v]++
	}
	return n, c
}

// linesFor: nettrap lines printed during t, its subtests, or, for a
// top-level test, its family.
func linesFor(r run, t string) []string {
	var out []string
	seen := map[string]bool{}
	for k, ls := range r.lines {
		if k == t || strings.HasPrefix(k, t+"/") {
			for _, l := range ls {
				if !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func main() {
	dir, pkgs := os.Args[1], os.Args[2:]
	differ := 0
	for _, pkg := range pkgs {
		f := strings.ReplaceAll(pkg, "/", "_")
		bare := load(filepath.Join(dir, f+".bare.json"))
		nt := load(filepath.Join(dir, f+".nettrap.json"))
		fmt.Printf("== %s: package bare=%s nettrap=%s\n", pkg, bare.pkg, nt.pkg)
		for _, topOnly := range []bool{true, false} {
			what := "all tests incl. subtests"
			if topOnly {
				what = "top-level tests"
			}
			nb, cb := counts(bare, topOnly)
			nn, cn := counts(nt, topOnly)
			fmt.Printf("   %-26s bare: %4d (pass %d, fail %d, skip %d)   nettrap: %4d (pass %d, fail %d, skip %d)\n",
				what, nb, cb["pass"], cb["fail"], cb["skip"], nn, cn["pass"], cn["fail"], cn["skip"])
		}
		names := map[string]bool{}
		for t := range bare.verdict {
			names[t] = true
		}
		for t := range nt.verdict {
			names[t] = true
		}
		var diff []string
		for t := range names {
			if bare.verdict[t] != nt.verdict[t] {
				diff = append(diff, t)
			}
		}
		sort.Strings(diff)
		differ += len(diff)
		fmt.Printf("   verdicts that differ: %d\n", len(diff))
		for _, t := range diff {
			b, n := bare.verdict[t], nt.verdict[t]
			if b == "" {
				b = "(absent)"
			}
			if n == "" {
				n = "(absent)"
			}
			ls := linesFor(nt, t)
			tag := "BLOCKED"
			if len(ls) == 0 {
				tag = "NO NETTRAP LINE"
			}
			fmt.Printf("   - %s: bare %s, nettrap %s [%s]\n", t, b, n, tag)
			for _, l := range ls {
				fmt.Printf("       %s\n", l)
			}
		}
		// Tests that were blocked but kept their verdict (swallowed or
		// tolerated the error): worth knowing, they are not differences.
		var same []string
		for t := range nt.lines {
			if t != "" && !strings.Contains(t, "/") && bare.verdict[t] == nt.verdict[t] {
				same = append(same, t)
			}
		}
		sort.Strings(same)
		if len(same) > 0 {
			fmt.Printf("   blocked but same verdict: %d\n", len(same))
			for _, t := range same {
				fmt.Printf("   - %s (%s)\n", t, nt.verdict[t])
				for _, l := range linesFor(nt, t) {
					fmt.Printf("       %s\n", l)
				}
			}
		}
		if ls := nt.lines[""]; len(ls) > 0 {
			fmt.Printf("   nettrap lines outside any test: %d\n", len(ls))
			for _, l := range ls {
				fmt.Printf("       %s\n", l)
			}
		}
	}
	if differ > 0 {
		os.Exit(1)
	}
}
EOF
}

main() {
	if [[ "${1:-}" == "--inside" ]]; then
		shift
		run_inside "$@"
		return
	fi
	local out="" nt="" xflags=""
	while getopts "o:n:x:h" opt; do
		case $opt in
		o) out=$OPTARG ;;
		n) nt=$OPTARG ;;
		x) xflags=$OPTARG ;;
		*) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	local pkgs=("$@")
	((${#pkgs[@]})) || pkgs=(net net/http os/exec)
	command -v unshare >/dev/null || die "unshare(1) not found"
	command -v ip >/dev/null || die "ip(8) not found"

	local repo
	repo=$(cd "$(dirname "$0")/.." && pwd)
	[[ -n "$out" ]] || out=$(mktemp -d /tmp/stdsuites.XXXXXX)
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	if [[ -z "$nt" ]]; then
		echo "stdsuites: building nettrap"
		(cd "$repo" && go build -o "$out/nettrap" ./cmd/nettrap) || die "go build failed"
		nt=$out/nettrap
	fi
	nt=$(cd "$(dirname "$nt")" && pwd)/$(basename "$nt")
	[[ -x "$nt" ]] || die "$nt is not executable"
	echo "nameserver 192.0.2.53" >"$out/resolv.conf"
	write_compare "$out"
	# Build the test binaries now (std needs no downloads); -exec true means
	# no test code runs out here.
	go test -short -count=1 -exec true -run '^$' "${pkgs[@]}" >/dev/null 2>&1 || true

	STDSUITES_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	echo "$STDSUITES_TOKEN" >"$out/.token"
	STDSUITES_PARENT_NETNS=$(readlink /proc/self/ns/net)
	STDSUITES_PARENT_MNTNS=$(readlink /proc/self/ns/mnt)
	export STDSUITES_TOKEN STDSUITES_PARENT_NETNS STDSUITES_PARENT_MNTNS

	local userns=()
	[[ $(id -u) == 0 ]] || userns=(--user --map-root-user)
	echo "stdsuites: output in $out"
	local rc=0
	unshare "${userns[@]}" --net --mount --propagation private -- \
		bash "$repo/scripts/stdsuites.sh" --inside "$out" "$nt" "$xflags" "${pkgs[@]}" || rc=$?
	rm -f "$out/.token"
	echo "stdsuites: report in $out/report.txt; streams in $out/*.json, audit logs in $out/*.audit.jsonl"
	return $rc
}

main "$@"
