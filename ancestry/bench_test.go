package ancestry

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkRead measures reading a blocked goroutine's chain (three live
// creators, or with tracebackancestors three kept ones) from a process
// with more goroutines parked beside it: what a denied call pays on top
// of its stack (callstack.BenchmarkUnwind), with a warm Layout.
func BenchmarkRead(b *testing.B) {
	for _, extra := range []int{10, 1000} {
		b.Run("live/goroutines="+strconv.Itoa(extra), func(b *testing.B) {
			readVictim(b, "live", nil, extraEnv+"="+strconv.Itoa(extra), noAncestors)
		})
		b.Run("kept/goroutines="+strconv.Itoa(extra), func(b *testing.B) {
			readVictim(b, "exited", nil, extraEnv+"="+strconv.Itoa(extra), "GODEBUG=tracebackancestors=8")
		})
	}
}

// goStatementEnv makes BenchmarkGoStatement's body run (in a re-executed
// test binary, whose GODEBUG is fixed at its start).
const goStatementEnv = "NETTRAP_ANCESTRY_GO_STATEMENT"

// BenchmarkGoStatement measures what GODEBUG=tracebackancestors=8 (which
// nettrap gives test binaries) adds to a go statement made 20 frames
// deep, nested once: the test binary re-executed with and without it,
// in the same run, alternating; the ratio is the metric.
func BenchmarkGoStatement(b *testing.B) {
	if os.Getenv(goStatementEnv) != "" {
		goStatements(b)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var bare, kept []float64
	for range 3 {
		bare = append(bare, nsPerGo(b, exe, noAncestors))
		kept = append(kept, nsPerGo(b, exe, "GODEBUG=tracebackancestors=8"))
	}
	slices.Sort(bare)
	slices.Sort(kept)
	b.ReportMetric(bare[1], "bare-ns/go")
	b.ReportMetric(kept[1], "kept-ns/go")
	b.ReportMetric(kept[1]/bare[1], "ratio")
}

// goStatements is the body: b.N go statements, each starting one more.
func goStatements(b *testing.B) {
	var deep func(n int)
	deep = func(n int) {
		if n > 0 {
			deep(n - 1)
			return
		}
		var wg sync.WaitGroup
		for b.Loop() {
			wg.Add(1)
			go func() { go wg.Done() }()
		}
		wg.Wait()
	}
	deep(20)
}

var nsPerOp = regexp.MustCompile(`BenchmarkGoStatement\S*\s+\d+\s+([\d.]+) ns/op`)

// nsPerGo runs the body in exe with env, and returns its ns/op.
func nsPerGo(b *testing.B, exe, env string) float64 {
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^BenchmarkGoStatement$", "-test.benchtime=200000x")
	cmd.Env = append(os.Environ(), goStatementEnv+"=1", env)
	out, err := cmd.CombinedOutput()
	m := nsPerOp.FindSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("%v: %s", err, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
