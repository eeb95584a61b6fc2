package teststream

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rerun the fixture binary and rewrite testdata/golden")

// scenario is one run of the fixture binary (testdata/fixture).
type scenario struct {
	name  string
	args  []string
	modes []Mode // modes whose native output the renderer must reproduce
}

var allModes = []Mode{ModeJSONFramed, ModeVerbose, ModeQuiet}

var scenarios = []scenario{
	{"basic", []string{"-test.run=^(TestPass|TestFail|TestSkip|TestNoNewline)$"}, allModes},
	{"allpass", []string{"-test.run=^(TestPass|TestSubPass|TestSkip)$"}, allModes},
	{"indented", []string{"-test.run=^TestIndentedStdout$"}, allModes},
	{"long", []string{"-test.run=^TestLong$"}, allModes},
	{"subtests", []string{"-test.run=^(TestSub|TestSubPass)$"}, allModes},
	// -test.parallel=1: the two parallel subtests then run one after the
	// other, in either order, so a native run can reproduce the order of
	// the recorded one (with both running at once, an interleaving could be
	// too rare to meet again in 30 tries).
	{"parallel", []string{"-test.run=^TestPar$", "-test.parallel=1"}, allModes},
	{"attr", []string{"-test.run=^TestAttr$"}, allModes},
	{"cleanup", []string{"-test.run=^(TestCleanup|TestCleanupPass)$"}, allModes},
	{"panic", []string{"-test.run=^(TestOK|TestPanic)$"}, allModes},
	{"exit", []string{"-test.run=^(TestOK|TestExit)$"}, allModes},
	{"example", []string{"-test.run=^Example"}, allModes},
	// Without -v the benchmark runner prints a different layout (see doc.go).
	{"bench", []string{"-test.run=^$", "-test.bench=.", "-test.benchtime=10x"}, []Mode{ModeJSONFramed, ModeVerbose}},
}

var modeFiles = map[Mode]string{ModeJSONFramed: "in", ModeVerbose: "verbose", ModeQuiet: "quiet"}

var modeFlags = map[Mode][]string{
	ModeJSONFramed: {"-test.v=test2json"},
	ModeVerbose:    {"-test.v=true"},
	ModeQuiet:      nil,
}

var normalizers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\(\d+\.\d+s\)`), "(0.00s)"},
	{regexp.MustCompile(`0x[0-9a-f]+`), "0x0"},
	{regexp.MustCompile(`goroutine \d+`), "goroutine 1"},
	{regexp.MustCompile(`\s+\d+\s+[\d.]+ ns/op`), " N ns/op"},
}

// normalize removes what differs between two runs of the same binary.
func normalize(b []byte) []byte {
	for _, n := range normalizers {
		b = n.re.ReplaceAll(b, []byte(n.repl))
	}
	return b
}

// buildFixture compiles the fixture test binary, or skips.
func buildFixture(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not in PATH; golden files are checked by TestGolden")
	}
	bin := filepath.Join(t.TempDir(), "fixture.test")
	cmd := exec.Command(goBin, "test", "-c", "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "fixture")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building fixture: %v\n%s", err, out)
	}
	return bin
}

// runFixture runs the binary with stdout and stderr on one pipe, as the go
// command and nettrap do, and returns the normalized output.
func runFixture(t *testing.T, bin string, args []string) []byte {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "GOTRACEBACK=single")
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running fixture: %v", err)
	}
	return normalize(out.Bytes())
}

// TestLive runs the fixture binary in all modes and checks that rendering its
// test2json output gives what the binary prints natively. Parallel tests may
// run in another order in each run, so a mismatch is retried with new runs
// before it counts.
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the fixture binary")
	}
	bin := buildFixture(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			in := runFixture(t, bin, append(sc.args, modeFlags[ModeJSONFramed]...))
			if *update {
				writeGolden(t, sc.name, ModeJSONFramed, in)
			}
			for _, m := range sc.modes[1:] {
				// Both the recorded run and the native ones are
				// retried: parallel subtests run in either order, one
				// of them rare, and a rare recorded order may not come
				// back natively in a few tries.
				got := renderAll(in, m, maxLine, 0)
				var want []byte
			retry:
				for range 10 {
					for range 5 {
						if want = runFixture(t, bin, append(sc.args, modeFlags[m]...)); bytes.Equal(got, want) {
							break retry
						}
					}
					got = renderAll(runFixture(t, bin, append(sc.args, modeFlags[ModeJSONFramed]...)), m, maxLine, 0)
				}
				if *update {
					writeGolden(t, sc.name, m, want)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("mode %s: rendered output differs from native output\n%s", modeFiles[m], lineDiff(got, want))
				}
			}
		})
	}
}

func writeGolden(t testing.TB, name string, m Mode, b []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name+"."+modeFiles[m])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t testing.TB, name string, m Mode) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name+"."+modeFiles[m]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lineDiff shows the first differing line of two outputs.
func lineDiff(got, want []byte) string {
	g, w := bytes.SplitAfter(got, []byte("\n")), bytes.SplitAfter(want, []byte("\n"))
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return "line " + itoa(i+1) + ":\n got: " + quote(gl) + "\nwant: " + quote(wl) +
				"\n--- got:\n" + string(got) + "\n--- want:\n" + string(want)
		}
	}
	return "(equal lines)"
}
