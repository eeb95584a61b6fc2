#!/usr/bin/env bash
# container-test.sh: build the nettrap image with Podman and runc, from a Go
# base image made here from this machine's own toolchain (no registry), and
# check the container entrypoint for real:
#
#   as root and as --user 65534, under the runtime's default seccomp profile,
#   with --network=none (nothing can leave the container):
#     - a suite with one leaky test fails with nettrap's report;
#     - a clean suite passes;
#   the audit log named on the workspace outlives the --rm container;
#   and an image built FROM the nettrap image, with a suite baked in, works
#   as a base image;
#   under Docker's default seccomp profile (moby/profiles, printed by the
#   mobyprofile fixture), which allows pidfd_getfd only with CAP_SYS_PTRACE:
#     - without it, `nettrap version` says emulation is off, the suites
#       still fail and pass as they should, with the one-time notice, and
#       --sealed refuses to run (125) naming --cap-add SYS_PTRACE;
#     - with --cap-add SYS_PTRACE, emulation is on, and --sealed as uid
#       65534 (as docs/running.md shows it) blocks the leaky suite and
#       passes the clean one.
#
# Needs root (it installs podman and runc from Debian's packages when they
# are missing, and uses the root storage in /var/lib/containers).
# Environment:
#   KEEP_IMAGES=1   keep the nettrap images afterwards (the base is kept anyway)
#   REBUILD_BASE=1  rebuild the base image even if it exists
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
fixtures=$root/integration/testdata/container
tag=localhost/nettrap-ct:$$
base_tag=localhost/nettrap-go-base:$(go env GOVERSION)

# This machine's runtime setup: runc with cgroupfs, and ulimits runc can set.
podman=(podman --runtime runc --cgroup-manager cgroupfs)
limits=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

start=$SECONDS
log() { printf 'container-test: [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

install_tools() {
	local missing=()
	command -v podman >/dev/null || missing+=(podman)
	command -v runc >/dev/null || missing+=(runc)
	[ ${#missing[@]} -eq 0 ] && return
	[ "$(id -u)" = 0 ] || die "need ${missing[*]} (apt-get install ${missing[*]}) or root to install them"
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# make_base imports a stand-in for the official golang image: this machine's
# GOROOT at /usr/local/go, busybox for a shell, GOPATH=/go world-writable.
make_base() {
	if [ -z "${REBUILD_BASE:-}" ] && "${podman[@]}" image exists "$base_tag"; then
		log "base image $base_tag exists"
		return
	fi
	local goroot rootfs deb
	goroot=$(go env GOROOT)
	rootfs=$work/rootfs
	mkdir -p "$rootfs"/{bin,etc,tmp,root,go/src,go/bin,usr/local} "$work/deb"
	(cd "$work/deb" && apt-get download busybox-static >/dev/null 2>&1) ||
		die "apt-get download busybox-static failed"
	deb=$(ls "$work"/deb/busybox-static_*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/deb" ./bin/busybox
	cp "$work/deb/bin/busybox" "$rootfs/bin/busybox"
	for applet in $("$rootfs/bin/busybox" --list); do
		[ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
	done
	chmod 1777 "$rootfs/tmp"
	chmod -R 1777 "$rootfs/go"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
	log "importing $base_tag from $goroot"
	# The rootfs ("./..."), then GOROOT ("go/...") renamed to usr/local/go.
	# S: symbolic link targets stay as they are.
	tar --numeric-owner --owner=0 --group=0 -c -C "$rootfs" . \
		-C "$(dirname "$goroot")" --transform "s,^$(basename "$goroot")\\(/\\|\$\\),usr/local/go\\1,S" \
		"$(basename "$goroot")" |
		"${podman[@]}" import \
			--change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV GOPATH=/go' \
			--change 'ENV GOTOOLCHAIN=local' \
			--change 'WORKDIR /go' \
			--change 'CMD ["sh"]' \
			- "$base_tag" >/dev/null
}

# make_context copies the working tree and vendors nettrap's modules from
# the local module cache, so the image builds with --network=none.
make_context() {
	ctx=$work/ctx
	mkdir -p "$ctx"
	tar -C "$root" --exclude=./.git --exclude=./nettrap --exclude=./bench/out \
		--exclude=./examples --exclude=./integration -c . | tar -x -C "$ctx"
	(cd "$ctx" && GOFLAGS=-mod=mod GOPROXY=off GOWORK=off go mod vendor) ||
		die "go mod vendor (from the local module cache) failed"
}

# --layers=false: no intermediate images are left behind from run to run.
build_image() {
	log "building $tag FROM $base_tag"
	"${podman[@]}" build -q --layers=false --pull=never --network=none "${limits[@]}" \
		--build-arg BASE="$base_tag" --build-arg VERSION=container-test \
		-t "$tag" -f "$root/Dockerfile" "$ctx" >/dev/null
}

# run_case NAME WANT_CODE PODMAN_RUN_ARGS... : runs the image with its default
# command, checks the exit status, leaves the output in $out.
run_case() {
	local name=$1 want=$2 code=0
	shift 2
	out=$("${podman[@]}" run --rm --network=none "${limits[@]}" "$@" 2>&1) || code=$?
	if [ "$code" != "$want" ]; then
		printf '%s\n' "$out" >&2
		die "$name: exit $code, want $want"
	fi
}

# check_leaky and check_clean look at the output of the fixture suites.
check_leaky() {
	local name=$1
	# Without emulation (Docker's profile) the socket type is not named.
	grep -Eq 'nettrap: Outbound network blocked: connect (tcp )?192\.0\.2\.1:443 \(external\)' <<<"$out" ||
		{ printf '%s\n' "$out" >&2; die "$name: no nettrap report for the leaky test"; }
	grep -q -- '--- FAIL: TestReportUsage' <<<"$out" ||
		{ printf '%s\n' "$out" >&2; die "$name: TestReportUsage did not fail"; }
	if grep -q -- '--- FAIL: TestFormat' <<<"$out"; then
		printf '%s\n' "$out" >&2
		die "$name: the clean test of the leaky suite failed"
	fi
	log "ok   $name: exit 1, $(grep -m1 -o 'nettrap: Outbound.*' <<<"$out")"
}

check_clean() {
	local name=$1
	grep -q '^ok[[:space:]]*example.com/clean' <<<"$out" ||
		{ printf '%s\n' "$out" >&2; die "$name: no ok line"; }
	if grep -q 'nettrap: Outbound' <<<"$out"; then
		printf '%s\n' "$out" >&2
		die "$name: nettrap blocked something in the clean suite"
	fi
	log "ok   $name: exit 0"
}

check_seccomp() {
	# The runtime's default profile must be in force under nettrap's filter:
	# Seccomp 2 (filter mode) before nettrap adds its own.
	local mode
	mode=$("${podman[@]}" run --rm --network=none "${limits[@]}" --entrypoint sh "$tag" \
		-c 'grep "^Seccomp:" /proc/self/status' | tr -d '[:space:]')
	[ "$mode" = "Seccomp:2" ] || die "the container runs without the default seccomp profile ($mode)"
	log "ok   default seccomp profile in force ($mode)"
}

# The runs share one build cache, as a CI job would mount one, so that only
# the first compiles the standard library. 65534 goes first: root can write
# into the cache directories nobody creates, not the other way round.
run_cases() {
	local user suite
	for user in 65534 0; do
		for suite in leaky clean; do
			if [ "$suite" = leaky ]; then
				run_case "$suite as $user" 1 --user "$user" -v "$cache:/tmp/go-build" -v "$fixtures/$suite:/src:ro" -w /src "$tag"
				check_leaky "$suite as $user"
			else
				run_case "$suite as $user" 0 --user "$user" -v "$cache:/tmp/go-build" -v "$fixtures/$suite:/src:ro" -w /src "$tag"
				check_clean "$suite as $user"
			fi
		done
	done
}

# audit_kept runs the leaky suite on a writable workspace with the audit
# log named there (NETTRAP_AUDIT_LOG, as docs/running.md shows): the log
# outlives the --rm container and holds the denial.
audit_kept() {
	local ws=$work/workspace
	cp -r "$fixtures/leaky" "$ws"
	chmod -R a+rwX "$ws"
	run_case "leaky with the audit log on the workspace" 1 --user 65534 -v "$cache:/tmp/go-build" -v "$ws:/src" -w /src \
		-e NETTRAP_AUDIT_LOG=/src/nettrap-audit.jsonl "$tag"
	check_leaky "leaky with the audit log on the workspace"
	grep '192\.0\.2\.1' "$ws/nettrap-audit.jsonl" | grep -q '"decision":"denied"' ||
		die "the audit log on the workspace holds no denial: $(cat "$ws/nettrap-audit.jsonl" 2>&1)"
	log "ok   audit log kept on the workspace ($(wc -l <"$ws/nettrap-audit.jsonl") records)"
}

# as_base builds an image FROM the nettrap image with the leaky suite baked
# in, the way a CI image would, and runs it without a volume.
as_base() {
	local dctx=$work/derived
	mkdir -p "$dctx"
	cp -r "$fixtures/leaky" "$dctx/suite"
	printf 'FROM %s\nCOPY suite /work/suite\nWORKDIR /work/suite\n' "$tag" >"$dctx/Dockerfile"
	"${podman[@]}" build -q --layers=false --pull=never --network=none "${limits[@]}" -t "$tag-derived" "$dctx" >/dev/null
	run_case "derived image as 65534" 1 --user 65534 -v "$cache:/tmp/go-build" "$tag-derived"
	check_leaky "derived image as 65534"
}

# moby_profile runs the image under Docker's default seccomp profile,
# passed explicitly (Podman's own default may differ), with and without
# CAP_SYS_PTRACE.
moby_profile() {
	local profile=$work/moby-default.json
	(cd "$fixtures/mobyprofile" && GOFLAGS=-mod=mod go run .) >"$profile" ||
		die "mobyprofile: cannot print Docker's default profile"
	local sec=(--security-opt "seccomp=$profile")
	local vol=(-v "$cache:/tmp/go-build")
	local notice='nettrap: emulation unavailable ('

	run_case "version under Docker's profile" 0 "${sec[@]}" --entrypoint nettrap "$tag" version
	grep -q '^emulation: off (.*pidfd_getfd' <<<"$out" ||
		{ printf '%s\n' "$out" >&2; die "Docker's profile without SYS_PTRACE: version does not say emulation is off"; }
	log "ok   version under Docker's profile: $(grep -m1 '^emulation:' <<<"$out")"
	run_case "version under Docker's profile with SYS_PTRACE" 0 "${sec[@]}" --cap-add SYS_PTRACE --entrypoint nettrap "$tag" version
	grep -q '^emulation: on' <<<"$out" ||
		{ printf '%s\n' "$out" >&2; die "Docker's profile with SYS_PTRACE: version does not say emulation is on"; }
	log "ok   version under Docker's profile with SYS_PTRACE: $(grep -m1 '^emulation:' <<<"$out")"

	local user
	for user in 65534 0; do
		run_case "leaky as $user under Docker's profile" 1 --user "$user" "${sec[@]}" "${vol[@]}" -v "$fixtures/leaky:/src:ro" -w /src "$tag"
		check_leaky "leaky as $user under Docker's profile"
		grep -qF "$notice" <<<"$out" ||
			{ printf '%s\n' "$out" >&2; die "leaky as $user under Docker's profile: no notice that emulation is unavailable"; }
		run_case "clean as $user under Docker's profile" 0 --user "$user" "${sec[@]}" "${vol[@]}" -v "$fixtures/clean:/src:ro" -w /src "$tag"
		check_clean "clean as $user under Docker's profile"
		run_case "--sealed as $user under Docker's profile" 125 --user "$user" "${sec[@]}" "${vol[@]}" -v "$fixtures/clean:/src:ro" -w /src \
			--entrypoint nettrap "$tag" --sealed -- go test ./...
		grep -q -- '--cap-add SYS_PTRACE' <<<"$out" ||
			{ printf '%s\n' "$out" >&2; die "--sealed as $user under Docker's profile: exit 125 without naming --cap-add SYS_PTRACE"; }
		log "ok   --sealed as $user under Docker's profile: exit 125, $(grep -m1 -o 'nettrap: .*' <<<"$out" | cut -c1-100)…"
	done
	run_case "leaky with SYS_PTRACE under Docker's profile" 1 "${sec[@]}" --cap-add SYS_PTRACE "${vol[@]}" -v "$fixtures/leaky:/src:ro" -w /src "$tag"
	check_leaky "leaky with SYS_PTRACE under Docker's profile"
	if grep -qF "$notice" <<<"$out"; then
		printf '%s\n' "$out" >&2
		die "leaky with SYS_PTRACE under Docker's profile: emulation unavailable"
	fi
	# --sealed as docs/running.md shows it under Docker's profile: with
	# SYS_PTRACE, as a user that is not root.
	local suite want
	for suite in leaky clean; do
		want=0
		[ "$suite" = leaky ] && want=1
		run_case "--sealed $suite as 65534 with SYS_PTRACE under Docker's profile" "$want" --user 65534 "${sec[@]}" --cap-add SYS_PTRACE \
			"${vol[@]}" -v "$fixtures/$suite:/src:ro" -w /src --entrypoint nettrap "$tag" --sealed -- go test ./...
		"check_$suite" "--sealed $suite as 65534 with SYS_PTRACE under Docker's profile"
	done
}

cleanup() {
	rm -rf "$work"
	if [ -z "${KEEP_IMAGES:-}" ]; then
		"${podman[@]}" rmi -f "$tag-derived" "$tag" >/dev/null 2>&1 || true
	fi
}

main() {
	[ "$(uname -s)" = Linux ] || die "Linux only"
	install_tools
	work=$(mktemp -d)
	trap cleanup EXIT
	cache=$work/gocache
	mkdir -p "$cache"
	chown 65534 "$cache"
	make_base
	make_context
	build_image
	check_seccomp
	run_cases
	audit_kept
	as_base
	moby_profile
	log "PASS"
}

main "$@"
