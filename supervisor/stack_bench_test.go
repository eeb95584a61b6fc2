package supervisor_test

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDeniedConnect weighs what reading the caller's stack adds to
// a denied call (issue 21): a confined victim makes b.N connects to the
// denied address one after another, and the decider reads each caller's
// stack (decision.StackOf, as guard does for every denied or audited
// call) or not (nostack). ns/op is the victim's own time per connect,
// without the processes' start; the stack run also reports x-nostack,
// its time over the nostack run just before it. The engine is
// NETTRAP_SUPERVISOR_TEST_ENGINE's. Everything is on loopback: the
// denied address, 127.0.0.2, is refused before the kernel sees it.
func BenchmarkDeniedConnect(b *testing.B) {
	var nostack float64
	for _, v := range []struct {
		name string
		env  []string
	}{
		{"nostack", []string{noStackEnv + "=1"}},
		{"stack", nil},
	} {
		b.Run(v.name, func(b *testing.B) {
			ns := deniedLoop(b, b.N, v.env)
			b.ReportMetric(ns, "ns/op")
			if v.name == "nostack" {
				nostack = ns
			} else if nostack > 0 {
				b.ReportMetric(ns/nostack, "x-nostack")
			}
		})
	}
}

// deniedLoop runs the victim's connect-loop of n denied connects under
// the supervisor role and returns its ns per connect.
func deniedLoop(b *testing.B, n int, env []string) float64 {
	b.Helper()
	cmd, report := roleCmd(b, "supervisor", "connect-loop", strconv.Itoa(n), "127.0.0.2:9")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("supervisor role: %v\n%s", err, out)
	}
	rep := readReport(b, report)
	got := strings.TrimSpace(string(out))
	v, ok := strings.CutPrefix(got, "ns:")
	ns, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil || rep.Denied != uint64(n) {
		b.Fatalf("victim said %q, supervisor denied %d of %d", got, rep.Denied, n)
	}
	want := "victim_test.go:"
	if len(env) > 0 {
		want = "not read"
	}
	if len(rep.Stacks) != n || !strings.HasPrefix(rep.Stacks[0], want) {
		b.Fatalf("stacks %q…, want %d starting %q", rep.Stacks[:min(len(rep.Stacks), 3)], n, want)
	}
	return ns
}
