// Command table reads `go test -bench` output of package bench on stdin
// and prints a Markdown table of the ratios for the README: per operation
// the median ns/op of each runner, the median of the paired ratios (each
// measured against the bare run just before it) with their range, and the
// peak RSS of the supervisors against the bare workload.
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

// ops in the order, with the letter and target.
var ops = []struct{ name, label, target string }{
	{"getppid", "(a) untrapped syscall (getppid)", "×1.00"},
	{"tcpconnect", "(b) loopback TCP socket+connect+close", "added ≤ 1.25× floor's"},
	{"udpsendto", "(c) unconnected loopback UDP sendto", "added ≤ 1.25× floor's"},
	{"udpsend", "(d) send on a connected UDP socket", "×1.00"},
	{"setsockopt", "(e) 3 ordinary setsockopt calls", "×1.00"},
}

func render(s samples, machine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Medians of %d interleaved runs; ratios are paired (each against the bare run just before it), median [min–max].\n\n", machine, s.runs())
	b.WriteString("| operation | bare ns/op | floor ns/op | nettrap ns/op | floor ×bare | nettrap ×bare | nettrap added / floor added | nettrap ×(--emulate=off) | target |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, op := range ops {
		if s.get(op.name, "bare", "ns/op") == nil {
			continue
		}
		added := "–"
		if a := s.get(op.name, "nettrap", "added-vs-floor"); a != nil {
			added = spread(a, 2)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op.label,
			num(s.get(op.name, "bare", "ns/op")), num(s.get(op.name, "floor", "ns/op")), num(s.get(op.name, "nettrap", "ns/op")),
			spread(s.get(op.name, "floor", "x-bare"), 2), spread(s.get(op.name, "nettrap", "x-bare"), 2), added,
			spread(s.get(op.name, "nettrap", "x-continue"), 2), op.target)
	}
	bare := s.all("bare", "rss-KiB")
	b.WriteString("\n| peak RSS (VmHWM) | KiB, median over all ops | × bare workload |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| workload, bare | %s | 1.00 |\n", num(bare))
	for _, r := range []string{"floor", "nettrap"} {
		sup := s.all(r, "sup-rss-KiB")
		fmt.Fprintf(&b, "| %s supervisor process | %s | %s |\n", r, num(sup), ratio(median(sup), median(bare)))
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
