#!/usr/bin/env bash
# prebuilt.sh [--cache DIR] ARCH OUT: the programs the integration tests build at run time
# (go build, gcc), built here for ARCH into OUT, for a test binary run
# with NETTRAP_TEST_PREBUILT=OUT (package integration/internal/prebuilt)
# where there is no toolchain: kernels.sh's guests (issue 38).
#
#   Go (CGO_ENABLED=0 GOARCH=ARCH):  victim, escapee, forgehub, nettrap,
#                                    test2json (the go command's);
#                                    fixtures/PKG.test, the test binaries
#                                    of the fixture module
#                                    (integration/gocmd/testdata) but wherecgo's,
#                                    which needs cgo
#   C (static; the flags of integration/internal/lab/build.go and
#   integration/internal/netsem/build.go):
#                                    holder, parentlisten, optflip, swapper,
#                                    netsem, nopidfd; escape32 (-m32) on
#                                    amd64 only: arm64 has no i386 ABI, and
#                                    lab.Need32 skips there
#
# The C compiler: gcc on amd64 (-m32 needs gcc-multilib), Debian's cross
# gcc 12 for arm64. Debian's gcc-12-aarch64-linux-gnu (the cross driver)
# conflicts with gcc-multilib, and apt-get would remove the latter, which
# escape32 and the host's own i386 tests need: so the parts that do not
# conflict are installed (cpp-12-aarch64-linux-gnu with cc1, the cross
# binutils, libc and libgcc) and the driver's package is only unpacked,
# into the cache (--cache, default /var/cache/nettrap-kernels: kernels.sh's),
# beside links to those parts. An aarch64-linux-gnu-gcc already on PATH is
# used as it is. Static, since the guests have no libc. Exits 3 when a
# compiler is missing and cannot be installed.
set -euo pipefail

cache=/var/cache/nettrap-kernels
if [ "${1:-}" = --cache ]; then cache=$2; shift 2; fi
[ $# -eq 2 ] || { echo "usage: prebuilt.sh [--cache DIR] amd64|arm64 OUT" >&2; exit 2; }
arch=$1 dir=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
log() { printf 'prebuilt: %s\n' "$*" >&2; }

# need PKG...: apt-get install what is missing (root only).
need() {
	[ "$(id -u)" = 0 ] || { log "SKIP: missing $* and not root to install it"; exit 3; }
	log "installing $*"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
		apt-get update -qq || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
			{ log "SKIP: cannot install $*"; exit 3; }
	fi
}

# cross_gcc: sets cc to gcc 12's arm64 cross driver, unpacked into the
# cache (see above: its package conflicts with gcc-multilib).
cross_gcc() {
	local gcclib=/usr/lib/gcc-cross/aarch64-linux-gnu/12 t deb
	t=$cache/cross-arm64
	[ -x $gcclib/cc1 ] && [ -e $gcclib/libgcc.a ] && [ -x /usr/bin/aarch64-linux-gnu-as ] &&
		[ -e /usr/aarch64-linux-gnu/lib/libc.a ] ||
		need cpp-12-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross libgcc-12-dev-arm64-cross
	if [ ! -e "$t/.done" ]; then
		mkdir -p "$cache/debs" || { log "SKIP: cannot write $cache (--cache DIR)"; exit 3; }
		deb=$(find "$cache/debs" -maxdepth 1 -name 'gcc-12-aarch64-linux-gnu_*_amd64.deb' | sort -V | tail -n1)
		if [ -z "$deb" ]; then
			log "apt-get download gcc-12-aarch64-linux-gnu"
			(cd "$cache/debs" && apt-get download -q gcc-12-aarch64-linux-gnu >/dev/null 2>&1) ||
				{ log "SKIP: cannot download gcc-12-aarch64-linux-gnu"; exit 3; }
			deb=$(find "$cache/debs" -maxdepth 1 -name 'gcc-12-aarch64-linux-gnu_*_amd64.deb' | sort -V | tail -n1)
		fi
		rm -rf "$t"
		dpkg-deb -x "$deb" "$t"
		# The driver looks for cc1, crt*.o and libgcc beside itself, and
		# for as, ld, the headers and libc in ../aarch64-linux-gnu.
		cp -rsn "$gcclib/." "$t$gcclib/"
		ln -sfn /usr/aarch64-linux-gnu "$t/usr/aarch64-linux-gnu"
		touch "$t/.done"
	fi
	cc=$t/usr/bin/aarch64-linux-gnu-gcc-12
}

case $arch in
amd64)
	cc=gcc
	command -v gcc >/dev/null || need gcc libc6-dev
	# -m32 -static needs the 32-bit libc of gcc-multilib.
	[ -e /usr/lib32/libc.a ] || need gcc-multilib
	;;
arm64)
	if command -v aarch64-linux-gnu-gcc >/dev/null && [ -e /usr/aarch64-linux-gnu/lib/libc.a ]; then
		cc=aarch64-linux-gnu-gcc
	else
		cross_gcc
	fi
	;;
*) echo "prebuilt.sh: ARCH amd64|arm64" >&2; exit 2 ;;
esac

mkdir -p "$dir"
log "$arch: go build victim escapee forgehub nettrap"
for p in integration/internal/victim integration/internal/escapee integration/internal/forgehub cmd/nettrap; do
	(cd "$root" && CGO_ENABLED=0 GOARCH=$arch go build -o "$dir/$(basename "$p")" "./$p")
done

# The attribution tests convert -test.v=test2json output with it.
log "$arch: go build cmd/test2json"
CGO_ENABLED=0 GOARCH=$arch go build -o "$dir/test2json" cmd/test2json

# The fixture module's test binaries, as the tests' buildFixtures would
# build them (its go environment: no proxy, no workspace).
log "$arch: fixtures: go test -c"
(cd "$root/integration/gocmd/testdata" &&
	fx=$(GOFLAGS=-mod=mod GOPROXY=off GOWORK=off GOTOOLCHAIN=local go list -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v '/wherecgo$') &&
	# shellcheck disable=SC2086 # one package a word
	GOFLAGS=-mod=mod GOPROXY=off GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOARCH=$arch \
		go test -c -o "$dir/fixtures/" $fx)

# cbuild NAME FLAGS... -- SOURCES...
cbuild() {
	local name=$1 flags=()
	shift
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	"$cc" -O1 -Wall -Werror -static "${flags[@]}" -o "$dir/$name" "$@"
}
lab=$root/integration/internal/lab/csrc
sem=$root/integration/internal/netsem
c_progs="holder parentlisten optflip swapper netsem nopidfd"
[ "$arch" != amd64 ] || c_progs="$c_progs escape32"
log "$arch: $(basename "$cc"): $c_progs"
# holder: not position-independent, its buffer below 4 GiB, where a 32-bit
# process_vm_writev can name it (lab/build.go).
cbuild holder -no-pie -- "$lab/holder.c"
cbuild parentlisten -pthread -- "$lab/parentlisten.c"
cbuild optflip -pthread -- "$lab/optflip.c"
cbuild swapper -pthread -- "$lab/swapper.c"
cbuild netsem -pthread -- "$sem"/csrc/*.c
cbuild nopidfd -pthread -- "$sem"/nopidfd/*.c
if [ "$arch" = amd64 ]; then
	cbuild escape32 -m32 -- "$lab/escape32.c"
fi
chmod -R a+rX "$dir"
