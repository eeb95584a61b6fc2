// Command table reads `go test -bench` output of package bench on stdin
// and prints Markdown tables of the ratios for docs/performance.md: per comparison
// (nettrap or a variant against its C floor, or an engine against another) and operation the median
// ns/op of each runner, the median of the paired ratios (each measured
// against the runs just before it) with their range, and the peak RSS of
// the supervisors against the bare workload.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
	s := parse(string(in))
	if len(s) == 0 {
		fmt.Fprintln(os.Stderr, "table: no BenchmarkOps lines on stdin")
		os.Exit(1)
	}
	fmt.Print(render(s, machine()))
}

func machine() string {
	var u unix.Utsname
	kernel := "?"
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	return fmt.Sprintf("nproc %d, kernel %s, %s/%s", runtime.NumCPU(), kernel, runtime.GOOS, runtime.GOARCH)
}

// ops in the order, with the letter; trapped ops are
// weighed by added cost, the others by plain ratio.
var ops = []struct {
	name, label string
	trapped     bool
}{
	{"getppid", "(a) untrapped syscall (getppid)", false},
	{"tcpconnect", "(b) loopback TCP socket+connect+accept+close", true},
	{"udpsendto", "(c) unconnected loopback UDP sendto", true},
	{"udpsend", "(d) send on a connected UDP socket", false},
	{"setsockopt", "(e) 3 ordinary setsockopt calls", false},
	{"udpgso", "(f) unconnected UDP sendmsg, GSO + ECN cmsgs (quic-go)", true},
}

// pairs are the comparisons, each a runner and the runner it is weighed
// against (bench's runners_test.go; refName names it in the table),
// shown when measured.
var pairs = []struct{ runner, ref, refName, title string }{
	{"nettrap", "cfloor-emu", "C floor", "nettrap as it comes (allowed inet calls emulated) against the C floor that emulates"},
	{"gofloor-emu", "cfloor-emu", "C floor", "the C floor that emulates written in Go (bench/internal/gofloor: the same calls, none of nettrap's code) against the C floor"},
	{"gofloor-emu-nosync", "cfloor-emu-nosync", "C floor", "the same without SYNC_WAKE_UP"},
	{"continue", "cfloor", "C floor", "nettrap --emulate=off (allowed calls continue in the kernel) against the C floor that continues"},
	{"nettrap-nosync", "cfloor-emu-nosync", "C floor", "without SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (kernels before 6.6), both emulating and blocking"},
	{"nettrap-nosync-spin", "cfloor-emu-nosync", "C floor", "the same, nettrap spinning up to 50 µs before it blocks (NETTRAP_TEST_RECV_SPIN_US=50)"},
	{"floor", "cfloor", "C floor", "the Go floor (nettrap's loop, a decider that allows all) against the C floor"},
	{"nettrap-kernel", "nettrap", "notify engine", "nettrap's kernel engine (--engine=kernel: the hold's programs pass loopback connects and sends in the kernel, the backstop sees every packet) against the notify engine as it comes"},
	{"kernel", "nettrap", "notify engine", "the kernel floor (bench/internal/kfloor: cgroup BPF programs pass loopback in the kernel, nothing goes to user space; issue 39) against the notify engine as it comes"},
	{"kernel-egress", "kernel", "kernel floor", "the kernel floor with the egress backstop (kfloor -e: a cgroup_skb program that drops every packet not to loopback) against the kernel floor"},
	{"kernel-hold", "kernel", "kernel floor", "the hold's programs (kfloor -hold: loopback passes, the rest is held for user space) against the kernel floor"},
	{"ptrace", "nettrap", "notify engine", "the ptrace engine (NETTRAP_ENGINE=ptrace) against the notify engine, both as they come (allowed inet calls emulated)"},
	{"nettrap-pre519", "cfloor-emu-nosync", "C floor", "without SYNC_WAKE_UP and WAIT_KILLABLE_RECV (kernels before 5.19), both emulating"},
	{"ptrace-parent", "ptrace", "ptrace", "the ptrace engine under a listener above (cfloor -w traps bind and listen, as WSL2's init does; auto falls back to ptrace, whose probe sees the listener hide none of nettrap's calls) against the ptrace engine alone"},
	{"ptrace-parent-entry", "ptrace-parent", "ptrace-parent", "the same with every syscall stopped at entry (NETTRAP_TEST_ENTRY_STOPS: as under --sealed, or a listener that hides nettrap's calls) against the seccomp stops"},
}

// runnerOrder is bench's runners in the order they run
// (runners_test.go).
var runnerOrder = []string{"bare", "cfloor", "continue", "cfloor-emu", "nettrap", "kernel", "kernel-egress", "kernel-hold", "nettrap-kernel", "gofloor-emu",
	"cfloor-emu-nosync", "nettrap-nosync", "gofloor-emu-nosync", "nettrap-nosync-spin", "nettrap-pre519",
	"cfloor-emu-nosync-spin", "floor", "ptrace", "ptrace-parent", "ptrace-parent-entry", "sealed", "sealed-pcall", "nettrap-base"}

// renderPing is the udpping op's table, when it was measured: per runner
// the ping's round trip from before the send, and from the send's return
// to the answer and to the datagram's arrival at the peer, each over
// bare's round trip measured just before; and the share of answers read
// before the send returned.
func renderPing(s samples) string {
	if s.get("udpping", "bare", "ping-ns") == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nudpping (a UDP ping whose send is trapped; times of the goroutines that saw each event; ratios over bare's round trip measured just before, negative where the event came before the send returned):\n\n")
	b.WriteString("| runner | round trip from before the send, ns | × bare | from the send's return to the answer, × bare's round trip | to the datagram's arrival at the peer, × bare's round trip | answers read before the send returned |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, r := range runnerOrder {
		if s.get("udpping", r, "ping-ns") == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r,
			num(s.get("udpping", r, "ping-ns")), spread(s.get("udpping", r, "ping-x-bare"), 2),
			spread(s.get("udpping", r, "after-answer-x-bare-ping"), 2), spread(s.get("udpping", r, "after-arrival-x-bare-ping"), 2),
			spread(s.get("udpping", r, "answer-first"), 2))
	}
	return b.String()
}

func render(s samples, machine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Medians of %d interleaved runs; ratios are paired (each against the runs just before it), median [min–max]. Added cost: (supervised − bare) / (reference − bare) for trapped calls; plain ratio × the reference for the others (goal against the C floor: added ≤ 1.25, × ≤ 1.05). In CPU time: the workload's and its supervisor's, per op.\n", machine, s.runs())
	for _, p := range pairs {
		if len(s.all(p.runner, "ns/op")) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n\n", p.title)
		fmt.Fprintf(&b, "| operation | bare ns/op | %s ns/op | %s ns/op | %s × bare | added / %s's added, or × %s | the same in CPU time |\n", p.refName, p.runner, p.runner, p.refName, p.refName)
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
		for _, op := range ops {
			if s.get(op.name, "bare", "ns/op") == nil {
				continue
			}
			cmp := "–"
			if v := s.get(op.name, p.runner, "added-vs-ref"); op.trapped && v != nil {
				cmp = spread(v, 2)
			} else if v := s.get(op.name, p.runner, "x-ref"); !op.trapped && v != nil {
				cmp = "×" + spread(v, 2)
			}
			cpu := "–"
			if v := s.get(op.name, p.runner, "cpu-added-vs-ref"); op.trapped && v != nil {
				cpu = spread(v, 2)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", op.label,
				num(s.get(op.name, "bare", "ns/op")), num(s.get(op.name, p.ref, "ns/op")), num(s.get(op.name, p.runner, "ns/op")),
				spread(s.get(op.name, p.runner, "x-bare"), 2), cmp, cpu)
		}
	}
	if spin := s.all("cfloor-emu-nosync-spin", "ns/op"); len(spin) > 0 {
		b.WriteString("\nC floor without SYNC_WAKE_UP, with and without a 50 µs bounded spin before blocking (ns/op):\n\n| operation | blocking | spin |\n|---|---:|---:|\n")
		for _, op := range ops {
			if op.trapped && s.get(op.name, "cfloor-emu-nosync-spin", "ns/op") != nil {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", op.label, num(s.get(op.name, "cfloor-emu-nosync", "ns/op")), num(s.get(op.name, "cfloor-emu-nosync-spin", "ns/op")))
			}
		}
	}
	b.WriteString(renderPing(s))
	bare := s.all("bare", "rss-KiB")
	b.WriteString("\n| peak RSS (VmHWM) | KiB, median over all ops | × bare workload |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| workload, bare | %s | 1.00 |\n", num(bare))
	for _, r := range []string{"cfloor", "cfloor-emu", "gofloor-emu", "floor", "continue", "nettrap", "nettrap-kernel", "kernel", "kernel-egress", "kernel-hold", "ptrace", "ptrace-parent", "ptrace-parent-entry"} {
		if sup := s.all(r, "sup-rss-KiB"); len(sup) > 0 {
			fmt.Fprintf(&b, "| %s supervisor process | %s | %s |\n", r, num(sup), ratio(median(sup), median(bare)))
		}
	}
	return b.String()
}

func num(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", median(v))
}

func spread(v []float64, prec int) string {
	if len(v) == 0 {
		return "–"
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if len(v) == 1 {
		return fmt.Sprintf("%.*f", prec, v[0])
	}
	return fmt.Sprintf("%.*f [%.*f–%.*f]", prec, median(v), prec, lo, prec, hi)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}
