package bench

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// runner is one way of running the workload.
type runner struct {
	name string
	// cmd is the supervisor's command line before the workload's; nil
	// for bare.
	cmd func(*builds) []string
	env []string // added to the environment of that command
	// ref is the runner this one is weighed against (x-ref,
	// added-vs-ref); it must come earlier in the list.
	ref    string
	cfloor bool // needs the C floor
	base   bool // needs NETTRAP_BENCH_BASE_BIN
}

// noSyncEnv withholds SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP from nettrap (a
// test-only switch: kernels before 6.6 lack the flag).
const noSyncEnv = "NETTRAP_TEST_NO_SYNC_WAKEUP=1"

// noKillableEnv withholds SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV too (a
// test-only switch: kernels before 5.19 lack it, RHEL 9's 5.14 and
// Ubuntu 22.04's 5.15 among them).
const noKillableEnv = "NETTRAP_TEST_NO_KILLABLE_RECV=1"

// ptraceEnv forces nettrap's ptrace engine (--engine=ptrace).
const ptraceEnv = "NETTRAP_ENGINE=ptrace"

// entryStopsEnv makes the ptrace engine stop every syscall at entry
// (supervisor's test-only switch).
const entryStopsEnv = "NETTRAP_TEST_ENTRY_STOPS=1"

// spinEnv makes nettrap's receivers spin up to 50 µs before they block
// (supervisor's internal/notify/spin.go; by default they do not).
const spinEnv = "NETTRAP_TEST_RECV_SPIN_US=50"

// allRunners, in the order they run: each ratio needs bare and its
// reference measured just before. "continue" is nettrap with
// --emulate=off (allowed calls continue in the kernel), weighed against
// the C floor that continues; nettrap as it comes emulates, and is
// weighed against the C floor that emulates. The -nosync runners do the
// same without SYNC_WAKE_UP (nettrap-nosync-spin spins up to 50 µs
// before it blocks, as cfloor-emu-nosync-spin does); "floor" is the Go floor sharing nettrap's
// loop (bench/internal/floor).
var allRunners = []runner{
	{name: "bare"},
	{name: "cfloor", cfloor: true, cmd: func(b *builds) []string { return []string{b.cfloor} }},
	{name: "continue", ref: "cfloor", cmd: func(b *builds) []string { return []string{b.nettrap, "--emulate=off", "--"} }},
	{name: "cfloor-emu", cfloor: true, cmd: func(b *builds) []string { return []string{b.cfloor, "-e"} }},
	{name: "nettrap", ref: "cfloor-emu", cmd: func(b *builds) []string { return []string{b.nettrap, "--"} }},
	// kernel is the kernel floor (bench/internal/kfloor, issue 39):
	// cgroup BPF programs pass loopback in the kernel and nothing goes
	// to user space; the command runs under nettrap's seccomp program
	// with every trap an allow. Weighed against nettrap. Root only.
	{name: "kernel", ref: "nettrap", cmd: func(b *builds) []string { return []string{b.kfloor, "-f", "--"} }},
	// kernel-egress adds the egress backstop (kfloor -e): a cgroup_skb
	// program that sees every packet as routed, for what the address
	// programs cannot see (control messages' source routes). Weighed
	// against the kernel floor.
	{name: "kernel-egress", ref: "kernel", cmd: func(b *builds) []string { return []string{b.kfloor, "-f", "-e", "--"} }},
	// kernel-hold runs the hold's programs instead (kfloor -hold: what
	// is not loopback is held for kfloor, which refuses it), the
	// programs an engine would run. Weighed against the kernel floor.
	{name: "kernel-hold", ref: "kernel", cmd: func(b *builds) []string { return []string{b.kfloor, "-f", "-hold", "--"} }},
	// nettrap-kernel is nettrap's kernel engine (--engine=kernel):
	// connects and sends to loopback pass in the kernel, weighed against
	// nettrap.
	// Root, and a kernel whose cgroup programs can hold a call.
	{name: "nettrap-kernel", ref: "nettrap", cmd: func(b *builds) []string { return []string{b.nettrap, "--engine=kernel", "--"} }},
	// gofloor-emu is cfloor -e written in Go (bench/internal/gofloor):
	// what a Go receiver costs with no code of nettrap's, weighed against
	// the C floor it ports.
	{name: "gofloor-emu", ref: "cfloor-emu", cmd: func(b *builds) []string { return []string{b.gofloor} }},
	{name: "cfloor-emu-nosync", cfloor: true, cmd: func(b *builds) []string { return []string{b.cfloor, "-e", "-n"} }},
	{name: "nettrap-nosync", ref: "cfloor-emu-nosync", env: []string{noSyncEnv},
		cmd: func(b *builds) []string { return []string{b.nettrap, "--"} }},
	{name: "gofloor-emu-nosync", ref: "cfloor-emu-nosync", cmd: func(b *builds) []string { return []string{b.gofloor, "-n"} }},
	{name: "nettrap-nosync-spin", ref: "cfloor-emu-nosync", env: []string{noSyncEnv, spinEnv},
		cmd: func(b *builds) []string { return []string{b.nettrap, "--"} }},
	// nettrap-pre519: as on a kernel before 5.19, with neither
	// SYNC_WAKE_UP nor WAIT_KILLABLE_RECV.
	{name: "nettrap-pre519", ref: "cfloor-emu-nosync", env: []string{noSyncEnv, noKillableEnv},
		cmd: func(b *builds) []string { return []string{b.nettrap, "--"} }},
	{name: "cfloor-emu-nosync-spin", cfloor: true, cmd: func(b *builds) []string { return []string{b.cfloor, "-e", "-n", "-s", "50"} }},
	{name: "floor", ref: "cfloor", cmd: func(b *builds) []string { return []string{b.floor} }},
	{name: "ptrace", ref: "nettrap", env: []string{ptraceEnv}, cmd: func(b *builds) []string { return []string{b.nettrap, "--"} }},
	{name: "ptrace-parent", ref: "ptrace", cfloor: true, cmd: func(b *builds) []string { return []string{b.cfloor, "-w", b.nettrap, "--"} }},
	// ptrace-parent-entry: the same, with every syscall stopped at entry
	// whatever the probe saw (as under --sealed, or a listener that hides
	// nettrap's calls), weighed against ptrace-parent.
	{name: "ptrace-parent-entry", ref: "ptrace-parent", cfloor: true, env: []string{entryStopsEnv},
		cmd: func(b *builds) []string { return []string{b.cfloor, "-w", b.nettrap, "--"} }},
	// sealed is nettrap --sealed, weighed against nettrap: as root, in a
	// network namespace of the command's own, where loopback needs no
	// peer check; a unix socket file's peer is checked (sock_diag,
	// /proc), which the default mode does not. sealed-pcall is --sealed
	// with the per-call checks of every unix and loopback peer
	// (--sealed-netns=off, and wherever no namespace can be made).
	{name: "sealed", ref: "nettrap", cmd: func(b *builds) []string { return []string{b.nettrap, "--sealed", "--"} }},
	{name: "sealed-pcall", ref: "nettrap", cmd: func(b *builds) []string { return []string{b.nettrap, "--sealed", "--sealed-netns=off", "--"} }},
	// nettrap-base is a nettrap built from another commit
	// (NETTRAP_BENCH_BASE_BIN; bench/compare.sh builds it), weighed
	// against this one: x-ref is its time over this nettrap's.
	{name: "nettrap-base", ref: "nettrap", base: true, cmd: func(b *builds) []string { return []string{b.base, "--"} }},
}

// baseBinEnv is the path of the nettrap-base runner's binary.
const baseBinEnv = "NETTRAP_BENCH_BASE_BIN"

// defaultRunners is what runs unless NETTRAP_BENCH_RUNNERS names others
// (comma-separated, in allRunners' order).
const defaultRunners = "bare,cfloor,continue,cfloor-emu,nettrap,ptrace,ptrace-parent,ptrace-parent-entry"

const runnersEnv = "NETTRAP_BENCH_RUNNERS"

func selectRunners(spec string) ([]runner, error) {
	if spec == "" {
		spec = defaultRunners
	}
	if spec == "all" {
		return allRunners, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(spec, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var rs []runner
	for _, r := range allRunners {
		if want[r.name] {
			rs = append(rs, r)
			delete(want, r.name)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("%s: unknown runners %v", runnersEnv, keys(want))
	}
	return rs, nil
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// buildCFloor compiles cfloor.c with the system C compiler into dir. No
// compiler is not an error: the C floor's runners skip (fail under
// CI=true) with the reason. A compiler that fails is an error.
func buildCFloor(dir string) (bin, missing string, err error) {
	cc, lookErr := exec.LookPath("cc")
	if lookErr != nil {
		if cc, lookErr = exec.LookPath("gcc"); lookErr != nil {
			return "", "no C compiler (cc, gcc) to build the C floor", nil
		}
	}
	src, err := filepath.Abs(filepath.Join("internal", "cfloor", "cfloor.c"))
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "cfloor")
	out, err := exec.Command(cc, "-O2", "-Wall", "-o", bin, src).CombinedOutput()
	if err != nil {
		return "", "", errors.Join(fmt.Errorf("%s %s: %w", cc, src, err), errors.New(string(out)))
	}
	return bin, "", nil
}
