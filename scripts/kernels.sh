#!/usr/bin/env bash
# kernels.sh: the kernel matrix (issue 38). Boots Debian's cloud kernels in
# QEMU (TCG) and runs nettrap's tests inside each guest, as root and as an
# unprivileged user (nobody, 65534):
#
#   supervisor, bpf, sealns, callstack   the test binaries, built here
#                                        (CGO_ENABLED=0 go test -c), CI=true
#   version                              nettrap version
#   demo                                 nettrap -- weather.test (examples/,
#                                        prebuilt): a blocked connect to the
#                                        fake API's address, loopback allowed,
#                                        the marked test let through
#   gotest                               the same as nettrap -- go test
#                                        ./weather, with this Go release for
#                                        the guest's architecture and a build
#                                        cache warmed here
#   kernelcut (as root)                  of integration's tests those whose
#                                        verdicts hang on the kernel, with
#                                        their programs prebuilt here
#                                        (scripts/kernels/prebuilt.sh)
#   integration (--integration only)     instead of kernelcut, the whole cut
#                                        (the escape matrix, emulation
#                                        semantics, TestNettrap*, attribution
#                                        from fixture binaries)
#
#   scripts/kernels.sh                   the matrix: amd64 6.1 and 6.12, arm64 6.12
#   scripts/kernels.sh --arch arm64 --kernel 6.12 --run 'supervisor:-test.run=TestX'
#   scripts/kernels.sh --self-test       checks the guest-status checking
#
# Options:
#   --arch amd64|arm64|all     (repeatable; default: the matrix)
#   --kernel 6.1|6.12|all      (repeatable; default: the matrix)
#   --run PKG[:ARGS]           what each guest runs instead of the default
#                              (repeatable): PKG is supervisor, bpf, sealns,
#                              callstack, kfloor (bench/internal/kfloor, as
#                              root), integration, gocmd
#                              (integration/gocmd) (ARGS: test binary
#                              flags, shell words in the guest: quote
#                              regexps; a bare integration runs the cut,
#                              in both packages), kernelcut, version,
#                              demo, gotest, or sh (ARGS: a guest shell
#                              command)
#   --integration              add the integration cut to the default plan
#                              (as root; the default timeout becomes 1800)
#   --user root|nobody|both    who runs it (default both)
#   --timeout SECONDS          per guest, from QEMU's start (default 420;
#                              900 with kernelcut in the plan, 1800 with
#                              integration)
#   --cache DIR                kernels, busybox (default /var/cache/nettrap-kernels)
#   --logs DIR                 console logs and test logs (default: a new
#                              directory under /tmp, printed at the end)
#   --smp N --mem SIZE         the guest's CPUs (2) and memory (2G)
#   --jobs N                   guests booted side by side (default 1: TCG
#                              guests sharing two cores ran 5 times slower)
#
# Each guest's /init mounts this script's share over virtiofs, copies the
# binaries to its tmpfs (TCG runs stale code from virtiofs), runs the plan,
# prints NETTRAP-GUEST-STATUS=<status> and powers off. The script fails when a
# guest's status is not 0, its kernel panics, or it does not finish in time.
#
# Exit status: 0 every guest passed; 1 a guest failed; 2 usage; 3 QEMU (or
# what the guests need) cannot be installed here: the matrix did not run.
# Needs root to install missing packages (apt-get) and to fetch kernels into
# a cache it cannot write; paths are relative to this script's repository,
# so another worktree's copy tests that worktree.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/scripts/kernels.sh
start=$SECONDS
log() { printf 'kernels: [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 3; }

archs=() kernels=() runs=() users=both timeout=420 cache=/var/cache/nettrap-kernels
logs='' smp=2 mem=2G jobs=1 self_test=0 apt_updated=0 integration=0 timeout_set=0
while [ $# -gt 0 ]; do
	case $1 in
	--arch) archs+=("$2"); shift 2 ;;
	--kernel) kernels+=("$2"); shift 2 ;;
	--run) runs+=("$2"); shift 2 ;;
	--user) users=$2; shift 2 ;;
	--timeout) timeout=$2 timeout_set=1; shift 2 ;;
	--integration) integration=1; shift ;;
	--cache) cache=$2; shift 2 ;;
	--logs) logs=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--self-test) self_test=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "kernels: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case $users in root) users=(root) ;; nobody) users=(nobody) ;; both) users=(root nobody) ;; *) echo "kernels: --user root|nobody|both" >&2; exit 2 ;; esac

# The matrix: arch/series pairs. --arch and --kernel narrow it (or, with
# "all" or a pair outside it, widen it to their product).
matrix=(amd64/6.1 amd64/6.12 arm64/6.12)
select_matrix() {
	local a k out=()
	if [ ${#archs[@]} -eq 0 ] && [ ${#kernels[@]} -eq 0 ]; then return; fi
	[ ${#archs[@]} -gt 0 ] || archs=(all)
	[ ${#kernels[@]} -gt 0 ] || kernels=(all)
	[ "${archs[*]}" != all ] || archs=(amd64 arm64)
	[ "${kernels[*]}" != all ] || kernels=(6.1 6.12)
	for a in "${archs[@]}"; do
		case $a in amd64 | arm64) ;; *) echo "kernels: --arch amd64|arm64|all" >&2; exit 2 ;; esac
		for k in "${kernels[@]}"; do
			case $k in 6.1 | 6.12) ;; *) echo "kernels: --kernel 6.1|6.12|all" >&2; exit 2 ;; esac
			out+=("$a/$k")
		done
	done
	matrix=("${out[@]}")
}

# ---- the guest's verdict, from its console log and QEMU's exit status ----

# verdict LOG RC: prints "pass", or what went wrong; returns 0 only on pass.
# RC 124 or 137 is timeout(1)'s: the guest did not finish in time.
verdict() {
	local console=$1 rc=$2 status
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "timed out (no power-off within the timeout)"; return 1
	fi
	if grep -aq -e 'Kernel panic' -e 'end Kernel panic' "$console"; then
		echo "kernel panic: $(grep -a -m1 'Kernel panic' "$console" | tr -d '\r')"; return 1
	fi
	status=$(tr -d '\r' <"$console" | sed -n 's/^NETTRAP-GUEST-STATUS=\([0-9][0-9]*\)$/\1/p' | tail -n1)
	if [ -z "$status" ]; then
		echo "no NETTRAP-GUEST-STATUS line (QEMU exit status $rc)"; return 1
	fi
	if [ "$status" != 0 ]; then
		echo "guest status $status"; return 1
	fi
	if [ "$rc" != 0 ]; then
		echo "QEMU exit status $rc after guest status 0"; return 1
	fi
	echo pass
}

# died_before_init CONSOLE: the kernel panicked before the guest's /init
# printed its first line: a boot under TCG that failed before anything
# of nettrap's ran (seen once: a fatal exception in update_rq_clock 1.4 s
# into 6.12's boot). Such a guest is booted once more; any other verdict
# stands.
died_before_init() {
	grep -aq 'Kernel panic' "$1" && ! tr -d '\r' <"$1" | grep -aqx 'NETTRAP-GUEST-INIT'
}

# ---- tools ----

install_tools() {
	local need=() pkgs=() p
	command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
	command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
	[ -x /usr/lib/qemu/virtiofsd ] || need+=(qemu-system-common)
	# busybox-static's has every applet the guest uses (setsid, su, …); grep
	# reads all of the list (-q would end the pipe early: pipefail).
	[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -x setsid >/dev/null || need+=(busybox-static)
	command -v depmod >/dev/null || need+=(kmod)
	command -v cpio >/dev/null || need+=(cpio)
	command -v xz >/dev/null || need+=(xz-utils)
	command -v dpkg-deb >/dev/null || skip "no dpkg-deb: this script needs Debian's tools"
	for p in "${need[@]}"; do pkgs+=("$p"); done
	[ ${#pkgs[@]} -eq 0 ] && return
	[ "$(id -u)" = 0 ] || skip "missing ${pkgs[*]} and not root to apt-get install them"
	log "installing ${pkgs[*]}"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; }; then
		skip "cannot install ${pkgs[*]} with apt-get"
	fi
}

# ---- kernels: the newest package of each series, fetched and unpacked ----

# pkg_regex ARCH SERIES: the names of that series' cloud kernels.
pkg_regex() {
	case $2 in
	6.1) echo "^linux-image-6\.1\.0-[0-9]+-cloud-$1-unsigned\$" ;;
	6.12) echo "^linux-image-6\.12\.[0-9]+\+deb12-cloud-$1-unsigned\$" ;;
	esac
}

# kernel_pkg ARCH SERIES: the newest such package apt knows of, or else the
# newest in the cache.
kernel_pkg() {
	local re name
	re=$(pkg_regex "$1" "$2")
	name=$(apt-cache search --names-only "$re" 2>/dev/null | cut -d' ' -f1 | grep -E "$re" | sort -V | tail -n1 || true)
	if [ -z "$name" ] && [ "$apt_updated" = 0 ] && [ "$(id -u)" = 0 ]; then
		# A machine whose apt lists are empty (a fresh container) or stale.
		log "apt knows no $1 $2 kernel: apt-get update"
		apt_updated=1
		apt-get update -qq || log "apt-get update failed"
		name=$(apt-cache search --names-only "$re" 2>/dev/null | cut -d' ' -f1 | grep -E "$re" | sort -V | tail -n1 || true)
	fi
	if [ -z "$name" ]; then
		name=$(find "$cache/debs" -maxdepth 1 -name "*_$1.deb" -printf '%f\n' 2>/dev/null | cut -d_ -f1 | grep -E "$re" | sort -V | tail -n1 || true)
		[ -z "$name" ] || log "apt knows no $1 $2 kernel: using $name from the cache"
	fi
	[ -n "$name" ] || die "no Debian $2 cloud kernel for $1 (apt-cache search '$re')"
	echo "$name"
}

# fetch_deb NAME ARCH: the .deb's path in the cache, downloaded if missing.
fetch_deb() {
	local name=$1 arch=$2 deb
	deb=$(find "$cache/debs" -maxdepth 1 -name "${name}_*_$arch.deb" | sort -V | tail -n1)
	if [ -z "$deb" ]; then
		log "apt-get download $name:$arch"
		(cd "$cache/debs" && apt-get download -q "$name:$arch" >/dev/null) || die "apt-get download $name:$arch"
		deb=$(find "$cache/debs" -maxdepth 1 -name "${name}_*_$arch.deb" | sort -V | tail -n1)
	fi
	[ -n "$deb" ] || die "no .deb for $name:$arch in $cache/debs"
	echo "$deb"
}

# unpack DEB: the unpacked tree (boot/, lib/modules/), depmod'd.
unpack() {
	local deb=$1 dir ver
	dir=$cache/unpacked/$(basename "$deb" .deb)
	if [ ! -e "$dir/.done" ]; then
		rm -rf "$dir"
		dpkg-deb -x "$deb" "$dir"
		ver=$(ls "$dir/lib/modules")
		depmod -b "$dir" "$ver"
		touch "$dir/.done"
	fi
	echo "$dir"
}

# arm64 packages need dpkg to know the architecture and apt its lists.
ensure_foreign_arch() {
	local arch=$1
	[ "$arch" != "$(dpkg --print-architecture)" ] || return 0
	dpkg --print-foreign-architectures | grep -qx "$arch" && return 0
	[ "$(id -u)" = 0 ] || return 0 # the cache may still hold what is needed
	log "dpkg --add-architecture $arch; apt-get update"
	dpkg --add-architecture "$arch"
	apt_updated=1
	apt-get update -qq || log "apt-get update failed: the cache must hold the $arch packages"
}

# busybox_for ARCH: a static busybox of that architecture.
busybox_for() {
	local arch=$1 deb dir
	if [ "$arch" = "$(dpkg --print-architecture)" ]; then echo /bin/busybox; return; fi
	dir=$cache/busybox-$arch
	if [ ! -x "$dir/bin/busybox" ]; then
		deb=$(fetch_deb busybox-static "$arch")
		rm -rf "$dir"
		dpkg-deb -x "$deb" "$dir"
	fi
	echo "$dir/bin/busybox"
}

# ---- the initramfs ----

# The guest's /init: mounts the share, runs its run.sh, prints the status.
guest_init() {
	cat <<'EOF'
#!/bin/sh
export PATH=/bin:/sbin
# The host tells a kernel that died before this line (booted again) from
# a guest whose run failed (booted_init).
echo NETTRAP-GUEST-INIT
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
ip link set lo up
hostname guest
guest=unknown
for w in $(cat /proc/cmdline); do
	case $w in nettrap.guest=*) guest=${w#nettrap.guest=} ;; esac
done
status=125
modprobe -a virtio_pci virtiofs 2>/dev/null
# The integration tests' modules (veth, vxlan, netfilter's NAT): loaded
# here, since the kernel's own loading runs /sbin/modprobe, which is not
# in this initramfs. And cgroup v2, where TestEscapeNetnsCgroupConnect's
# escapee attaches its BPF program to a cgroup of its own, and kfloor its
# programs.
if [ -s /etc/nettrap-modules ]; then
	modprobe -a $(cat /etc/nettrap-modules) || echo "guest: modprobe -a $(cat /etc/nettrap-modules) failed"
fi
mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup || echo "guest: cannot mount cgroup2"
if mount -t virtiofs share /mnt; then
	cp /mnt/run.sh /tmp/run.sh
	KERNELS_GUEST=$guest sh /tmp/run.sh
	status=$?
else
	echo "guest: cannot mount the share over virtiofs"
fi
umount /mnt 2>/dev/null
echo "NETTRAP-GUEST-STATUS=$status"
sync
poweroff -f
EOF
}

# The modules the integration cut needs beyond the cloud kernels' built-ins:
# the lab's veth, xfrm_user (a netlink handle opens NETLINK_XFRM beside
# NETLINK_ROUTE and fails without it), the escapee's vxlan and macvlan, the
# nftables and legacy iptables NAT of the DNAT escapes, and the socket
# diagnostics nettrap's per-call peer checks ask (--sealed without a
# namespace of its own: without unix_diag every checked call is denied,
# "unix_diag dump: no such file or directory"). Their dependencies come
# along.
integration_modules=(veth xfrm_user vxlan macvlan nf_tables nft_chain_nat nft_nat nft_masq
	ip_tables iptable_nat xt_nat xt_MASQUERADE unix_diag inet_diag tcp_diag udp_diag)

# initramfs ARCH KTREE IMAGE: busybox, the virtio and virtiofs modules
# (uncompressed, depmod'd), those of the integration tests when the plan
# has them, /init, passwd and group for nobody.
initramfs() {
	local arch=$1 ktree=$2 image=$3 ir ver bb m rel a mods=(virtio_pci virtiofs)
	ir=$(mktemp -d)
	ver=$(ls "$ktree/lib/modules")
	mkdir -p "$ir"/{bin,sbin,etc,proc,sys,dev,tmp,mnt,root,lib/modules/"$ver"}
	chmod 755 "$ir"
	bb=$(busybox_for "$arch")
	cp "$bb" "$ir/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$ir/bin/$a"
	done
	# modprobe --show-depends lists each module after its dependencies.
	if builds integration || builds gocmd; then
		mods+=("${integration_modules[@]}")
		printf '%s\n' "${integration_modules[@]}" >"$ir/etc/nettrap-modules"
		# The sandbox bind-mounts its resolv.conf over this one.
		: >"$ir/etc/resolv.conf"
	fi
	for m in "${mods[@]}"; do
		modprobe -d "$ktree" -S "$ver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
	done | sort -u | while read -r m; do
		rel=${m#"$ktree"/lib/modules/"$ver"/}
		mkdir -p "$ir/lib/modules/$ver/$(dirname "$rel")"
		case $m in
		*.xz) xz -dc "$m" >"$ir/lib/modules/$ver/${rel%.xz}" ;;
		*.zst) zstd -qdc "$m" >"$ir/lib/modules/$ver/${rel%.zst}" ;;
		*) cp "$m" "$ir/lib/modules/$ver/$rel" ;;
		esac
	done
	cp "$ktree/lib/modules/$ver"/modules.{order,builtin,builtin.modinfo} "$ir/lib/modules/$ver/" 2>/dev/null || true
	depmod -b "$ir" "$ver"
	guest_init >"$ir/init"
	chmod 755 "$ir/init"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$ir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$ir/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$ir/etc/hosts"
	(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$image"
	rm -rf "$ir"
}

# ---- what the guest runs ----

# run.sh, in the share: runs each line of plan as each user. The test
# binaries run from the guest's tmpfs, in a copy of their package directory
# (their testdata), with CI=true; the console gets each run's failures,
# skips and verdict, out/GUEST/ the whole -test.v output.
guest_run() {
	cat <<'EOF'
#!/bin/sh
# Generated by scripts/kernels.sh: the guest's plan, as each user.
set -u
nt=/tmp/nt
out=/mnt/out/$KERNELS_GUEST
mkdir -p "$out" "$nt" /tmp/home
cp -a /mnt/bin /mnt/src /mnt/users "$nt/"
for u in $(cat /mnt/users); do cp "/mnt/plan.$KERNELS_GUEST.$u" "$nt/plan.$u"; done
[ ! -d /mnt/prebuilt ] || cp -a /mnt/prebuilt "$nt/"
# go test's tree (gotree.tar: the go command, a build cache): one cache
# for every user (world-writable; go never rewrites an entry in place).
if [ -f /mnt/gotree.tar ]; then
	tar -xf /mnt/gotree.tar -C "$nt" && chmod -R a+rwX "$nt/gocache"
fi
chmod -R a+rX "$nt"
chmod 1777 /tmp/home
echo "guest $KERNELS_GUEST: $(uname -r) $(uname -m), $(nproc) CPUs, booted in $(cut -d' ' -f1 /proc/uptime)s"
echo "guest: user namespaces: max $(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo ?)," \
	"unprivileged_userns_clone $(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo absent);" \
	"LSMs $(cat /sys/kernel/security/lsm 2>/dev/null || echo ?)"
failed=0

# as USER SCRIPT: runs the job script as that user.
as() {
	if [ "$1" = root ]; then sh "$2"; else su -s /bin/sh "$1" -c "sh $2"; fi
}

# summary LOG: what the console shows of a -test.v run.
summary() {
	awk '
	/^=== / { next }
	/^[ \t]*--- PASS/ { pass++; n = 0; next }
	/^[ \t]*--- (FAIL|SKIP)/ {
		if ($0 ~ /FAIL/) fail++; else skip++
		for (i = 0; i < n; i++) print "    | " buf[i]
		print "  " $0; n = 0; next
	}
	/^(ok|PASS|FAIL)([ \t]|$)/ { print "  " $0; n = 0; next }
	{ if (n < 12) buf[n++] = $0; else { for (i = 1; i < 12; i++) buf[i-1] = buf[i]; buf[11] = $0 } }
	END { printf "  passed %d, failed %d, skipped %d\n", pass, fail, skip }' "$1"
}

# The demo's fake API listens on 203.0.113.80:80 (lo): root starts it.
if cat "$nt"/plan.* | grep -q '^\(demo\|gotest\)'; then
	ip addr add 203.0.113.80/32 dev lo
	setsid "$nt/bin/fakeapi" -addr 203.0.113.80:80 -log /tmp/fakeapi.log -ready /tmp/fakeapi.ready >/tmp/fakeapi.out 2>&1 &
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do [ -e /tmp/fakeapi.ready ] && break; sleep 0.5; done
fi

job=0
while read -r user; do
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		pkg=${line%%:*}
		args=
		case $line in *:*) args=${line#*:} ;; esac
		job=$((job + 1))
		script=$nt/job$job.sh
		logf=$out/$job-$pkg-$user.log
		case $pkg in
		supervisor | bpf | sealns | callstack | kfloor)
			printf 'cd %s/src/%s && exec env HOME=/tmp/home TMPDIR=/tmp CI=true %s/bin/%s.test -test.v %s\n' \
				"$nt" "$pkg" "$nt" "$pkg" "$args" >"$script" ;;
		integration | gocmd)
			# The programs its tests would build with go and gcc,
			# prebuilt on the host (package prebuilt).
			printf 'cd %s/src/%s && exec env HOME=/tmp/home TMPDIR=/tmp CI=true NETTRAP_TEST_PREBUILT=%s/prebuilt %s/bin/%s.test -test.v %s\n' \
				"$nt" "$pkg" "$nt" "$nt" "$pkg" "$args" >"$script" ;;
		version)
			printf 'exec %s/bin/nettrap version %s\n' "$nt" "$args" >"$script" ;;
		demo | gotest)
			printf 'cd /tmp/home && exec sh %s/src/demo.sh %s %s %s\n' "$nt" "$nt" "$user" "$pkg" >"$script" ;;
		sh)
			printf '%s\n' "$args" >"$script" ;;
		*)
			echo "guest: unknown plan entry $pkg"; failed=1; continue ;;
		esac
		chmod a+r "$script"
		t0=$(date +%s)
		as "$user" "$script" >"$logf" 2>&1 </dev/null
		rc=$?
		t=$(($(date +%s) - t0))
		echo "== $pkg ${args:+($args) }as $user: exit $rc, ${t}s"
		case $pkg in
		supervisor | bpf | sealns | callstack | integration | gocmd)
			summary "$logf"
			if [ "$rc" != 0 ] && ! grep -q -- '--- FAIL' "$logf"; then tail -n 40 "$logf" | sed 's/^/    | /'; fi ;;
		*)
			sed 's/^/    | /' "$logf" | tail -n 60 ;;
		esac
		[ "$rc" = 0 ] || failed=1
	done <"$nt/plan.$user"
done <"$nt/users"
echo "guest: done at $(cut -d' ' -f1 /proc/uptime)s"
exit $failed
EOF
}

# demo.sh, in the share: the weather suite under nettrap, with the fake API
# on 203.0.113.80:80 (lo): TestForecast's loopback server works, the
# forgotten mock's connect is blocked, the marked live test reaches the API.
guest_demo() {
	cat <<'EOF'
#!/bin/sh
# Generated by scripts/kernels.sh: sh demo.sh NTDIR USER demo|gotest
# demo: nettrap -- weather.test (prebuilt); gotest: nettrap -- go test
# ./weather, with the host's Go release for this architecture and a build
# cache the host warmed for it (the guest compiles the demo's packages).
nt=$1 user=$2 mode=$3
if ! [ -e /tmp/fakeapi.ready ]; then
	echo "$mode: the fake API (started by root) is not up"; exit 1
fi
o=/tmp/home/$mode-$user.out
rc=0
if [ "$mode" = gotest ]; then
	g=/tmp/home/go-$user
	rm -rf "$g" && mkdir -p "$g" && cp -r "$nt/examples" "$g/" || exit 1
	(cd "$g/examples" && exec env HOME=/tmp/home TMPDIR=/tmp GOROOT="$nt/goroot" PATH="$nt/goroot/bin:$PATH" \
		GOCACHE="$nt/gocache" GOTOOLCHAIN=local GOPROXY=off GOFLAGS= CGO_ENABLED=0 \
		"$nt/bin/nettrap" -- go test -count=1 -v ./weather) >"$o" 2>&1 || rc=$?
	rm -rf "$g"
else
	"$nt/bin/nettrap" -- "$nt/bin/weather.test" -test.v >"$o" 2>&1 || rc=$?
fi
cat "$o"
ok=1
want() { # TEXT WHY
	grep -q -- "$1" "$o" || { echo "$mode: $2"; ok=0; }
}
[ "$rc" = 1 ] || { echo "$mode: nettrap exited $rc, want 1 (TestForecastBergen blocked)"; ok=0; }
want '--- PASS: TestForecast ' "TestForecast (loopback) did not pass"
want '--- FAIL: TestForecastBergen' "TestForecastBergen was not failed"
want '203.0.113.80' "nettrap's report does not name 203.0.113.80"
want '--- PASS: TestLiveForecast' "the marked TestLiveForecast did not pass"
if [ "$mode" = gotest ]; then
	want 'blocked: connect tcp 203.0.113.80:80 (external) during TestForecastBergen at weather/weather.go:' \
		"the blocked line does not name the test and the caller's line"
	want '^FAIL	github.com/nettrap/nettrap/examples/weather' "go test did not report the package failed"
	want '^nettrap: 1 outbound network attempt blocked in 1 package' "no run summary naming the one blocked attempt"
fi
[ "$ok" = 1 ] && echo "$mode: as expected (exit 1: one connect blocked, loopback and the marked test allowed)"
[ "$ok" = 1 ]
EOF
}

# ---- build: the test binaries and nettrap for ARCH, into the share ----

plan_needs() { printf '%s\n' "${plan[@]}" | grep -q "^$1\(:\|$\)"; }
# builds PKG: the plan runs it, or a bare integration entry (the cut, which
# runs tests of integration/gocmd too: expand_integration).
builds() {
	plan_needs "$1" && return
	case $1 in integration | gocmd) printf '%s\n' "${plan[@]}" | grep -qx 'integration\|kernelcut' ;; *) false ;; esac
}

build_share() {
	local arch=$1 share=$2 pkg
	mkdir -p "$share/bin" "$share/src" "$share/out"
	local dir
	for pkg in supervisor bpf sealns callstack kfloor integration gocmd; do
		builds "$pkg" || continue
		dir=$pkg
		[ "$pkg" != gocmd ] || dir=integration/gocmd
		[ "$pkg" != kfloor ] || dir=bench/internal/kfloor
		log "$arch: go test -c ./$dir"
		(cd "$root" && CGO_ENABLED=0 GOARCH=$arch go test -c -o "$share/bin/$pkg.test" "./$dir")
		mkdir -p "$share/src/$pkg"
		cp "$root/$dir"/*.go "$share/src/$pkg/"
		[ ! -d "$root/$dir/testdata" ] || cp -r "$root/$dir/testdata" "$share/src/$pkg/"
	done
	if builds integration || builds gocmd; then
		local rc=0
		"$root/scripts/kernels/prebuilt.sh" --cache "$cache" "$arch" "$share/prebuilt" || rc=$?
		[ "$rc" != 3 ] || skip "$arch: the integration tests' programs cannot be built here (scripts/kernels/prebuilt.sh)"
		[ "$rc" = 0 ] || die "$arch: scripts/kernels/prebuilt.sh exited $rc"
	fi
	if plan_needs version || plan_needs demo || plan_needs gotest; then
		log "$arch: go build ./cmd/nettrap"
		(cd "$root" && CGO_ENABLED=0 GOARCH=$arch go build -o "$share/bin/nettrap" ./cmd/nettrap)
	fi
	if plan_needs demo || plan_needs gotest; then
		log "$arch: examples: go test -c ./weather, go build ./testdata/fakeapi"
		(cd "$root/examples" && CGO_ENABLED=0 GOARCH=$arch go test -c -o "$share/bin/weather.test" ./weather &&
			CGO_ENABLED=0 GOARCH=$arch go build -o "$share/bin/fakeapi" ./testdata/fakeapi)
		guest_demo >"$share/src/demo.sh"
	fi
	if plan_needs gotest; then
		guest_go "$arch" "$share"
	fi
	guest_run >"$share/run.sh"
	printf '%s\n' "${users[@]}" >"$share/users"
}

# write_plans ARCH KERNEL SHARE: each user's plan for guest ARCH-KERNEL
# (the guests of one architecture share SHARE).
write_plans() {
	local arch=$1 kernel=$2 share=$3 u
	for u in "${users[@]}"; do
		if [ ${#runs[@]} -gt 0 ]; then printf '%s\n' "${runs[@]}"; else plan_for "$arch" "$kernel" "$u"; fi |
			expand_integration "$arch" "$kernel" >"$share/plan.$arch-$kernel.$u"
	done
}

# guest_go ARCH SHARE: what `nettrap -- go test ./weather` needs in the
# guest, as one file, gotree.tar (the guest reads one large file over
# virtiofs in seconds, where thousands of small ones took minutes): the Go
# release running here, for ARCH (this GOROOT for the host's
# architecture, golang.org/toolchain from the module proxy for another),
# with only what that go test reads (the go command and the four tools it
# runs, and the sources of the packages it builds: go list -deps -test);
# the demo's sources; and a build cache warm for it. The cache is made
# here with GOARCH=ARCH (go test -exec true): a release's compiler names
# itself by its version alone, so the guest's go finds the standard
# library compiled. It is kept in the cache directory per release and
# architecture (cold, some 40 s of CPU here).
guest_go() {
	local arch=$1 share=$2 ver goroot gc tree=$work/gotree-$1 host_goroot
	ver=$(go env GOVERSION)
	host_goroot=$(go env GOROOT)
	case $ver in go1.*) ;; *) skip "$arch: go test in the guest needs a Go release here, not $ver" ;; esac
	if [ "$arch" = "$(go env GOHOSTARCH)" ]; then
		goroot=$host_goroot
	else
		goroot=$(cd / && GOFLAGS= go mod download -json "golang.org/toolchain@v0.0.1-$ver.linux-$arch" |
			sed -n 's/^\t"Dir": "\(.*\)",$/\1/p') || true
		[ -d "$goroot" ] || die "$arch: cannot download golang.org/toolchain@v0.0.1-$ver.linux-$arch"
	fi
	log "$arch: the guest's go: $ver from $goroot"
	mkdir -p "$tree/goroot" "$tree/examples/weather"
	# (golang.org/toolchain's zips hold src/_go.mod for src/go.mod: the
	# tree is taken as it is, as the go command runs it after a download.)
	{
		for f in VERSION go.env bin/go src/go.mod src/_go.mod src/go.sum src/vendor/modules.txt pkg/include \
			pkg/tool/linux_"$arch"/{compile,link,asm,vet}; do
			[ ! -e "$goroot/$f" ] || echo "$f"
		done
		(cd "$root/examples" && GOOS=linux GOARCH=$arch CGO_ENABLED=0 GOFLAGS= \
			go list -deps -test -f '{{if .Goroot}}{{.Dir}}{{end}}' ./weather) |
			sed -n "s|^$host_goroot/||p" | while read -r d; do
				find "$goroot/$d" -maxdepth 1 -type f ! -name '*_test.go' -printf "$d/%f\n"
			done
	} >"$tree/files"
	(cd "$goroot" && tar -c -T "$tree/files") | tar -x -C "$tree/goroot"
	# (The module cache's files are read-only and not executable: the go
	# command makes a downloaded toolchain's programs executable itself.)
	chmod -R u+w "$tree/goroot"
	chmod a+x "$tree/goroot/bin/go" "$tree/goroot/pkg/tool/linux_$arch"/*
	cp "$root/examples/go.mod" "$tree/examples/"
	cp "$root/examples/weather"/*.go "$tree/examples/weather/"
	gc=$cache/gocache/$ver-$arch
	if [ ! -d "$gc" ]; then
		log "$arch: warming the guest's build cache ($gc)"
		find "$cache/gocache" -mindepth 1 -maxdepth 1 ! -name "$ver-*" -exec rm -rf {} + 2>/dev/null || true
	fi
	(cd "$root/examples" && GOCACHE=$gc GOARCH=$arch CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS= \
		go test -count=1 -exec /bin/true ./weather >/dev/null) || die "$arch: go test -exec true ./weather (warming $gc)"
	cp -r "$gc" "$tree/gocache"
	tar -cf "$share/gotree.tar" -C "$tree" goroot gocache examples
	log "$arch: gotree.tar $(du -m "$share/gotree.tar" | cut -f1) MB"
}

# ---- boot ----

# boot ARCH KTREE INITRD SHARE NAME: one guest; its verdict in $guest_verdict.
boot() {
	local arch=$1 ktree=$2 initrd=$3 share=$4 name=$5 ver sock vfs_pid rc=0 t0 console cmdline qemu=()
	ver=$(ls "$ktree/lib/modules")
	console=$logs/$name.console.log
	sock=$work/$name.vfs.sock
	rm -f "$sock"
	/usr/lib/qemu/virtiofsd --socket-path="$sock" -o source="$share" -o cache=none \
		>"$logs/$name.virtiofsd.log" 2>&1 &
	vfs_pid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || { kill "$vfs_pid" 2>/dev/null || true; die "virtiofsd did not start (see $logs/$name.virtiofsd.log)"; }
	case $arch in
	# qemu64, not max: TCG emulates max's AVX, which Go's runtime then
	# uses, slowly (supervisor's tests: 39 s against 52 s in 6.12's guest).
	amd64) qemu=(qemu-system-x86_64 -cpu qemu64) cmdline="console=ttyS0" ;;
	arm64) qemu=(qemu-system-aarch64 -M virt -cpu "max,pauth-impdef=on") cmdline="console=ttyAMA0" ;;
	esac
	cmdline="$cmdline quiet loglevel=3 panic=-1 oops=panic nettrap.guest=$name"
	t0=$SECONDS
	timeout --kill-after=10 "$timeout" "${qemu[@]}" -accel tcg,thread=multi -smp "$smp" -m "$mem" \
		-nodefaults -no-user-config -display none -no-reboot \
		-serial "file:$console" -monitor none \
		-object "memory-backend-memfd,id=mem,size=$mem,share=on" -numa node,memdev=mem \
		-chardev "socket,id=vfs,path=$sock" -device vhost-user-fs-pci,chardev=vfs,tag=share \
		-kernel "$ktree/boot/vmlinuz-$ver" -initrd "$initrd" -append "$cmdline" \
		</dev/null >"$logs/$name.qemu.log" 2>&1 || rc=$?
	kill "$vfs_pid" 2>/dev/null || true
	wait "$vfs_pid" 2>/dev/null || true
	rm -f "$sock"
	guest_time=$((SECONDS - t0))
	guest_verdict=$(verdict "$console" "$rc") || true
}

# ---- self-test: the verdict without a boot, then one failing and one hanging guest ----

self_test() {
	local d bad=0 v rc out
	d=$(mktemp -d)
	check() { # NAME WANT LOG-TEXT RC
		printf '%b' "$3" >"$d/log"
		v=$(verdict "$d/log" "$4") && rc=pass || rc=fail
		if [ "$rc" != "$2" ]; then log "self-test: $1: verdict '$v', want $2"; bad=1; else log "self-test: $1: $v"; fi
	}
	check "status 0" pass 'boot\r\nNETTRAP-GUEST-STATUS=0\r\n' 0
	check "status 1" fail 'NETTRAP-GUEST-STATUS=1\n' 0
	check "no status" fail 'booting\n' 0
	check "timeout" fail 'NETTRAP-GUEST-STATUS=0\n' 124
	check "killed after timeout" fail '' 137
	check "panic" fail 'Kernel panic - not syncing: Attempted to kill init!\n' 0
	check "panic after status" fail 'NETTRAP-GUEST-STATUS=0\nKernel panic - not syncing: x\n' 0
	check "status in a line" fail 'echo NETTRAP-GUEST-STATUS=0\n' 0
	check "last status wins" fail 'NETTRAP-GUEST-STATUS=0\nNETTRAP-GUEST-STATUS=2\n' 0
	check "qemu failed" fail 'NETTRAP-GUEST-STATUS=0\n' 1
	again() { # NAME WANT(yes|no) LOG-TEXT
		printf '%b' "$3" >"$d/log"
		if died_before_init "$d/log"; then v=yes; else v=no; fi
		if [ "$v" != "$2" ]; then log "self-test: $1: booted again: $v, want $2"; bad=1; else log "self-test: $1: booted again: $v"; fi
	}
	again "panic before init" yes '[ 1.4] Kernel panic - not syncing: Fatal exception in interrupt\r\n'
	again "panic after init" no 'NETTRAP-GUEST-INIT\r\nKernel panic - not syncing: x\r\n'
	again "init, no panic" no 'NETTRAP-GUEST-INIT\r\nNETTRAP-GUEST-STATUS=1\r\n'
	again "no init, no panic" no 'booting\r\n'
	rm -rf "$d"
	# Two boots of the first kernel of the matrix: a command that exits 1
	# must fail the script; one that hangs must time out and fail it.
	local a=${matrix[0]%/*} k=${matrix[0]#*/}
	rc=0
	out=$("$self" --arch "$a" --kernel "$k" --user root --cache "$cache" --run 'sh:echo self-test; exit 1' 2>&1) || rc=$?
	if [ "$rc" = 1 ] && grep -q 'guest status 1' <<<"$out"; then log "self-test: a guest exiting 1 fails the script"
	else log "self-test: a guest exiting 1: script exit $rc, want 1 with 'guest status 1':"; printf '%s\n' "$out" | tail -n 20 >&2; bad=1; fi
	rc=0
	out=$("$self" --arch "$a" --kernel "$k" --user root --cache "$cache" --timeout 8 --run 'sh:sleep 3600' 2>&1) || rc=$?
	if [ "$rc" = 1 ] && grep -q 'timed out' <<<"$out"; then log "self-test: a hanging guest times out and fails the script"
	else log "self-test: a hanging guest: script exit $rc, want 1 with 'timed out':"; printf '%s\n' "$out" | tail -n 20 >&2; bad=1; fi
	[ "$bad" = 0 ] || die "self-test failed"
	log "self-test: ok"
}

# ---- main ----

select_matrix
install_tools
mkdir -p "$cache/debs" "$cache/unpacked" 2>/dev/null || die "cannot write the cache $cache (--cache DIR)"
if [ "$self_test" = 1 ]; then self_test; exit 0; fi

# The default plan. callstack's fixture tests build a program with the go
# command, which the guest lacks: they run on the host only.
callstack_skip=(TestUnwindARM64Synthetic TestExternalLinking TestUnwindStripped TestUnwindPIE)
# supervisor: as root, the whole suite but its two races with thousands of
# tries (TestEmulationClosesTheRace, TestPidfdGetfdRace: 100 s of the
# suite's 155 s in amd64 6.1's guest, idle; they run on the host in CI).
# As nobody, those that show what a kernel gives or refuses an
# unprivileged user: the notify engine's answers and emulation, the
# netlink hand-over with ADDFD_FLAG_SEND, ADDFD under signals, the
# withheld features, the command's user namespace, the Landlock domain,
# the ptrace engine's probe and decisions, the supervisor's death,
# sealing (the rest is the same code as root's, and CI's time is short).
supervisor_races=(TestEmulationClosesTheRace TestPidfdGetfdRace)
# The signal storms, for CI's time (some 30 s of amd64's guests, 44 s of
# arm64's): the restarted calls run on amd64 6.1, where they found a bug,
# and on arm64, whose restart of a call differs; the ptrace engine's
# (the hand-over and a parent listener under signals) on amd64 6.1; none
# on amd64 6.12, the kernel nearest the host's. All run on the host.
supervisor_storms=(TestRestartedConnect TestRestartedSend TestRestartedSendmsg)
supervisor_ptrace_storms=(TestPtraceHandOverUnderSignals TestPtraceUnderParentListener)
supervisor_run=(TestConnectAllowedAndDenied TestEmulatedAllowedCalls TestNetlinkHandedOver
	TestAddfdSendUnderSignals TestWithheldKernelFeatures TestUsernsOfTheCommand TestTreeDomain
	TestPtraceProbe TestPtraceDecidesAside TestSupervisorKilled TestSealing)
# Known failures on arm64, left out of arm64's default plan (the script
# says so) until they are fixed; empty these to run them. (callstack's
# TestUnwindPtrace, found here, was fixed on cs38: arm64 rewinds the pc of
# a call to restart onto its SVC before a ptrace stop.)
arm64_known_supervisor=()
arm64_known_callstack=()

# re NAME...: a -test.run or -test.skip pattern for exactly those tests.
re() { local IFS='|'; printf '^(%s)$' "$*"; }

# integration's cut (issue 38): the escape matrix, the emulation semantics,
# the TestNettrap tests, the attribution tests that run prebuilt fixture
# binaries (the golden ones that run go test cannot). Left out: what needs
# a toolchain the guest lacks (the go command: TestEscapeProcMemGoCommand;
# gcc at test time: TestNettrapBlocksCProgram,
# TestNettrapConfinesI386Program; bash: TestNettrapGenericDenialFailsRun),
# and the races of thousands of tries:
# the descriptor swaps (1070 s of amd64 6.1's guest under load, and their
# controls' 20000 and 200000 tries ran past the tests' 2-minute limit
# there) and TestEscapeValueFlip (541 s of arm64's): they run on the host.
integration_run=('TestEscape.*' TestEmulationSemantics 'TestNettrap.*')
gocmd_run=(TestAttribution TestBinarySummary TestArgvAttribution TestGitHubActionsTestBinary)
integration_skip=(TestEscapeProcMemGoCommand TestNettrapBlocksCProgram TestNettrapConfinesI386Program
	TestNettrapGenericDenialFailsRun
	'TestEscapeDescriptorSwap.*' TestEscapeValueFlip)
# Left out on 6.1 (Landlock ABI 2): the escapes through another process's
# memory, descriptors and signals, which nettrap refuses with a Landlock
# domain of the tree's own, made in default mode from ABI 6 (Linux 6.12)
# on: docs/threat-model.md says what holds without one. Their tests fail
# under CI=true where the kernel lacks it.
integration_skip_6_1=(TestEscapeProcMemReaper TestEscapeProcMemWaker TestEscapeProcMemOutside)

# The kernel cut, in the default plan (CI's): of the integration cut, the
# tests whose verdicts hang on the kernel or the architecture, each where
# it shows what the host cannot: on every guest the lookups' and a
# leftover goroutine's attribution (the caller's registers, read while it
# goes to sleep: TestNettrapDeniesLookup, TestBinarySummary, which the
# guests' timing found), a namespace's escape, the supervisor's memory,
# raw sockets, nobody; on 6.1, the oldest kernel, the emulation's
# answers against bare ones (TestEmulationSemantics, below); on amd64 6.1
# the i386 escapes (the host of CI cannot exec 32-bit programs); on
# amd64 6.12 the escapes through another process's memory, which only a
# Landlock ABI 6 kernel can refuse, and the i386 denial; on arm64 the same
# escapes (refused before the x86-64 payload), the other families and XDP.
kernelcut_all=(TestNettrapDeniesLookup TestEscapeNetnsSetns TestEscapeSupervisorMemory
	TestNettrapDeniesRawSockets TestNettrapAsNobody)
kernelcut_amd64_6_1=('TestEscapeI386.*' TestEscapeOtherFamiliesDenied)
kernelcut_amd64_6_12=('TestEscapeProcMem(Outside|Waker|Reaper)' TestNettrapDeniesI386)
kernelcut_arm64_6_12=('TestEscapeProcMem(Outside|Waker|Reaper)' TestEscapeOtherFamiliesDenied TestEscapeXDPSocket)
kernelcut_arm64_6_1=(TestEscapeOtherFamiliesDenied TestEscapeXDPSocket)
kernelcut_gocmd=(TestBinarySummary)
# TestEmulationSemantics runs on 6.1 as nobody only (netsem bare and under
# nettrap, both emulation modes: 32 s; root's half runs on the host): the
# unprivileged case, where nettrap works from a user namespace of its own.
kernelcut_semantics="integration:-test.run='^TestEmulationSemantics\$/^nobody\$'"

# expand_integration ARCH KERNEL: a plan on stdin with a bare
# "integration" entry replaced by the cut, and "kernelcut" by the kernel
# cut for that guest: their tests in integration and in integration/gocmd
# (the attribution tests, which run the go command on the host but here
# prebuilt fixture binaries).
expand_integration() {
	local arch=$1 kernel=$2 line skip=("${integration_skip[@]}") kc
	kc="kernelcut_${arch}_${kernel/./_}[@]"
	kc=("${kernelcut_all[@]}" "${!kc}")
	[ "$kernel" != 6.1 ] || skip+=("${integration_skip_6_1[@]}")
	while IFS= read -r line; do
		case $line in integration | kernelcut)
			[ "$kernel" != 6.1 ] || log "6.1: NOT RUN: ${integration_skip_6_1[*]} (Landlock ABI 2: no domain for the tree in default mode, docs/threat-model.md)" ;;
		esac
		if [ "$line" = integration ]; then
			echo "integration:-test.run='$(re "${integration_run[@]}")' -test.skip='$(re "${skip[@]}")'"
			echo "gocmd:-test.run='$(re "${gocmd_run[@]}")'"
		elif [ "$line" = kernelcut ]; then
			echo "integration:-test.run='$(re "${kc[@]}")' -test.skip='$(re "${skip[@]}")'"
			[ "$kernel" != 6.1 ] || echo "$kernelcut_semantics"
			echo "gocmd:-test.run='$(re "${kernelcut_gocmd[@]}")'"
		else
			printf '%s\n' "$line"
		fi
	done
}

# plan_for ARCH KERNEL USER: the default plan, one entry a line.
plan_for() {
	local arch=$1 kernel=$2 user=$3 sup_skip=() cs_skip=("${callstack_skip[@]}") races=("${supervisor_races[@]}")
	case $arch/$kernel in
	amd64/6.12) races+=("${supervisor_storms[@]}" "${supervisor_ptrace_storms[@]}") ;;
	arm64/*) races+=("${supervisor_ptrace_storms[@]}") ;;
	esac
	if [ "$arch" = arm64 ]; then
		sup_skip=("${arm64_known_supervisor[@]}")
		cs_skip+=("${arm64_known_callstack[@]}")
		if [ ${#sup_skip[@]} -gt 0 ] || [ ${#arm64_known_callstack[@]} -gt 0 ]; then
			log "arm64 ($user): NOT RUN, known failures: ${sup_skip[*]} ${arm64_known_callstack[*]}"
		fi
	fi
	echo version
	if [ "$user" = root ]; then
		echo "supervisor:-test.skip='$(re "${races[@]}" "${sup_skip[@]}")'"
	elif [ ${#sup_skip[@]} -gt 0 ]; then
		echo "supervisor:-test.run='$(re "${supervisor_run[@]}")' -test.skip='$(re "${sup_skip[@]}")'"
	else
		echo "supervisor:-test.run='$(re "${supervisor_run[@]}")'"
	fi
	# bpf's and callstack's tests are the same for any user (a filter
	# needs no privilege), and sealns's need root (CAP_SYS_ADMIN, which
	# nettrap has in the command's user namespace): nobody runs the rest.
	if [ "$user" = root ]; then
		# (TestProgramEquivalent: the BPF VM's, the same on any kernel; the
		# host runs it, for both architectures' programs.)
		echo "bpf:-test.short -test.skip='^TestProgramEquivalent\$'"
		echo sealns
		echo "callstack:-test.skip='$(re "${cs_skip[@]}")'"
	fi
	echo demo
	# go test as root on 6.1 only, for CI's time (the demo runs as root on
	# every guest): the unprivileged run is the one with more to differ.
	[ "$user" != root ] || [ "$kernel" = 6.1 ] && echo gotest
	# The integration tests run their nobody cases themselves, as root.
	if [ "$user" = root ]; then
		if [ "$integration" = 1 ]; then echo integration; else echo kernelcut; fi
	fi
}

if [ ${#runs[@]} -gt 0 ]; then
	plan=("${runs[@]}")
else
	plan=(version supervisor bpf sealns callstack demo gotest)
	if [ "$integration" = 1 ]; then plan+=(integration); else plan+=(kernelcut); fi
fi
# The integration cut takes minutes under TCG, more than the default.
if [ "$timeout_set" = 0 ]; then
	if plan_needs integration || plan_needs gocmd; then timeout=1800
	elif plan_needs kernelcut; then timeout=900; fi
fi

work=$(mktemp -d /tmp/nettrap-kernels-work.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -n "$logs" ] || logs=$(mktemp -d /tmp/nettrap-kernels-logs.XXXXXX)
mkdir -p "$logs"

# Kernels first (one fetcher at a time per cache), then one share per arch.
exec 9>"$cache/.lock"
flock 9
declare -A ktrees=() shares=()
for pair in "${matrix[@]}"; do
	a=${pair%/*} k=${pair#*/}
	ensure_foreign_arch "$a"
	name=$(kernel_pkg "$a" "$k")
	deb=$(fetch_deb "$name" "$a")
	ktrees[$pair]=$(unpack "$deb")
	log "$a $k: $(basename "$deb")"
	if [ "$a" != "$(dpkg --print-architecture)" ]; then busybox_for "$a" >/dev/null; fi
done
flock -u 9

# The guests run one at a time unless --jobs says otherwise: three side by
# side on two cores took five times as long each (supervisor's tests: 249
# s against 47 s alone), their vCPUs outnumbering the cores.
for pair in "${matrix[@]}"; do
	a=${pair%/*} k=${pair#*/}
	if [ -z "${shares[$a]:-}" ]; then
		shares[$a]=$work/share-$a
		build_share "$a" "${shares[$a]}"
	fi
	write_plans "$a" "$k" "${shares[$a]}"
	initramfs "$a" "${ktrees[$pair]}" "$work/$a-$k.initrd"
done
running=0
for pair in "${matrix[@]}"; do
	a=${pair%/*} k=${pair#*/} name=${pair/\//-}
	if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
	log "$name: booting $(basename "${ktrees[$pair]}") (timeout ${timeout}s, console $logs/$name.console.log)"
	(
		boot "$a" "${ktrees[$pair]}" "$work/$name.initrd" "${shares[$a]}" "$name"
		if died_before_init "$logs/$name.console.log"; then
			log "$name: $guest_verdict, before the guest's init ran: booting it again (the first console: $logs/$name.console.1.log)"
			mv "$logs/$name.console.log" "$logs/$name.console.1.log"
			boot "$a" "${ktrees[$pair]}" "$work/$name.initrd" "${shares[$a]}" "$name"
		fi
		printf '%s %s\n' "$guest_time" "$guest_verdict" >"$work/$name.verdict"
	) &
	running=$((running + 1))
done
wait

failed=()
summary=()
for pair in "${matrix[@]}"; do
	a=${pair%/*} name=${pair/\//-}
	guest_time=? guest_verdict="no verdict (the script's boot failed: see above)"
	[ ! -s "$work/$name.verdict" ] || read -r guest_time guest_verdict <"$work/$name.verdict"
	[ ! -d "${shares[$a]}/out/$name" ] || cp -r "${shares[$a]}/out/$name" "$logs/$name.out"
	# The guest's own lines: what each run gave.
	tr -d '\r' <"$logs/$name.console.log" 2>/dev/null | sed -n '/^guest /,$p' | grep -v '^NETTRAP-GUEST-STATUS=' | sed "s/^/  $name | /" >&2 || true
	log "$name: $guest_verdict (${guest_time}s)"
	summary+=("$name: $guest_verdict, ${guest_time}s")
	if [ "$guest_verdict" != pass ]; then
		failed+=("$name")
		log "$name: the console's last lines:"
		tr -d '\r' <"$logs/$name.console.log" 2>/dev/null | tail -n 40 | sed 's/^/    /' >&2
	fi
done

log "logs: $logs"
printf 'kernels: %s\n' "${summary[@]}" >&2
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]}"
log "ok"
