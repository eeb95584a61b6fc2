package gocmd

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// outputMode is how the go command (or a person) runs a test binary.
type outputMode struct {
	name  string
	flags []string
}

var outputModes = []outputMode{
	{"json", []string{"-test.v=test2json"}}, // what go test -json passes
	{"verbose", []string{"-test.v=true"}},   // go test -v
	{"quiet", nil},                          // go test
}

// outcomeOf reads a run's output in its mode.
func outcomeOf(t *testing.T, m outputMode, stdout, pkg string) outcome {
	t.Helper()
	switch m.name {
	case "json":
		return framedOutcome(t, stdout, pkg)
	case "verbose":
		return verboseOutcome(stdout)
	}
	return quietOutcome(stdout)
}

// attributionScenario is one run of a fixture test binary under nettrap.
type attributionScenario struct {
	name, pkg string
	flags     []string // nettrap's
	args      []string // the binary's
	want      expectation
}

var attributionScenarios = []attributionScenario{
	{name: "sequential", pkg: "seq", want: seqExpect(false)},
	{name: "allow-test", pkg: "seq", flags: []string{"--allow-test", seqAllowTests}, want: seqExpect(true)},
	{name: "parallel-ambiguous", pkg: "parallel", args: []string{"-test.parallel=2"}, want: parallelAmbiguousExpect("-test.parallel=1")},
	{name: "parallel-pinned", pkg: "pinned", args: []string{"-test.parallel=1"}, want: parallelPinnedExpect()},
	{name: "testmain", pkg: "testmain", want: testmainExpect()},
	{name: "init", pkg: "initleak", want: initExpect()},
	{name: "panic", pkg: "panicleak", want: panicExpect()},
	{name: "os-exit-0", pkg: "exitleak", want: exitExpect(false)},
}

// TestAttribution runs every fixture binary under nettrap in the three
// output modes and checks each test's verdict, which test every nettrap
// line is shown under, the exit status, and that only the marked tests'
// connections reached the fake hosts. On package clean, which makes no
// attempt, nettrap must not change the output at all, durations aside.
func TestAttribution(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "seq", "parallel", "pinned", "testmain", "initleak", "panicleak", "exitleak", "clean")
	for _, sc := range attributionScenarios {
		for _, m := range outputModes {
			t.Run(sc.name+"/"+m.name, func(t *testing.T) {
				eps := fixtureEndpoints()
				h := fakehost.Start(t, eps...)
				mark := h.Mark()
				bin := filepath.Join(bins, sc.pkg+".test")
				run := runConfined(t, bin, sc.pkg, sc.flags, slices.Concat(m.flags, sc.args))
				checkRun(t, run, sc.want)
				got := outcomeOf(t, m, run.Stdout, fixtureModule+"/"+sc.pkg)
				if errs := diffOutcome(got, sc.want, m.name == "quiet"); len(errs) > 0 {
					t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
				}
				checkArrivals(t, h, mark, eps, sc.want.arrivals)
			})
		}
	}
	for _, m := range outputModes {
		t.Run("clean/"+m.name, func(t *testing.T) {
			bin := filepath.Join(bins, "clean.test")
			bare := harness.RunIn(t, filepath.Join(fixtureRoot(t), "clean"), harness.GoEnv(), bin, m.flags...)
			trapped := runConfined(t, bin, "clean", nil, m.flags)
			if bare.Code != 0 || trapped.Code != 0 || trapped.Stderr != "" {
				t.Errorf("exit %d without nettrap, %d with it; nettrap's stderr: %q", bare.Code, trapped.Code, trapped.Stderr)
			}
			if !sameLines(bare.Stdout, trapped.Stdout) {
				t.Errorf("output differs\nwithout nettrap:\n%q\nwith nettrap:\n%q", bare.Stdout, trapped.Stdout)
			}
		})
	}
}

func checkRun(t *testing.T, run harness.Run, want expectation) {
	t.Helper()
	if run.Code != want.code {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", run.Code, want.code, run.Stdout, run.Stderr)
	}
	// A test binary's output, nettrap's lines included, is all on stdout:
	// nettrap's own stderr has the run's summary at most.
	if rest := withoutSummary(t, lab.DropSealedNotice(run.Stderr)); rest != "" {
		t.Errorf("nettrap wrote to stderr, beyond the run's summary:\n%s", run.Stderr)
	}
}

// TestAttributionGoTestJSON runs the fixtures the way IDEs and CI do,
// `go test -json -exec nettrap`: the stream must be valid JSON and give
// every test the expected verdict, the nettrap lines under the right test.
func TestAttributionGoTestJSON(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	withExit := func(e expectation) expectation {
		e.final = "FAIL" // the go command reports every package that exits non-zero
		return e
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want map[string]expectation
	}{
		{
			name: "packages",
			args: []string{"-parallel=2", "./seq", "./parallel", "./testmain", "./initleak", "./panicleak", "./exitleak"},
			want: map[string]expectation{
				"seq": seqExpect(false), "parallel": parallelAmbiguousExpect("-parallel=1"), "testmain": testmainExpect(),
				"initleak": initExpect(), "panicleak": withExit(panicExpect()), "exitleak": withExit(exitExpect(true)),
			},
		},
		{
			name: "allow-test-env",
			env:  []string{"NETTRAP_ALLOW_TEST=" + seqAllowTests},
			args: []string{"./seq"},
			want: map[string]expectation{"seq": seqExpect(true)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := fixtureEndpoints()
			h := fakehost.Start(t, eps...)
			mark := h.Mark()
			args := slices.Concat([]string{"test", "-json", "-count=1", "-exec", nettrap}, tc.args)
			out, code := goCmd(t, fixtureRoot(t), harness.GoEnv(tc.env...), args...)
			if code != 1 {
				t.Errorf("go test exit %d, want 1", code)
			}
			evs := decodeJSON(t, out)
			var arrivals []arrival
			for _, pkg := range slices.Sorted(maps.Keys(tc.want)) {
				want := tc.want[pkg]
				got := fromEvents(evs, fixtureModule+"/"+pkg)
				if errs := diffOutcome(got, want, false); len(errs) > 0 {
					t.Errorf("package %s:\n%s", pkg, strings.Join(errs, "\n"))
				}
				arrivals = append(arrivals, want.arrivals...)
			}
			if t.Failed() {
				t.Logf("go test -json output:\n%s", out)
			}
			checkArrivals(t, h, mark, eps, arrivals)
		})
	}
}

// durations are what may differ between two runs of the same tests.
var durations = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s$`)

func sameLines(a, b string) bool {
	norm := func(s string) []string {
		var out []string
		for line := range strings.Lines(s) {
			out = append(out, durations.ReplaceAllString(strings.TrimRight(line, "\n"), "(D)"))
		}
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// TestCleanOutputUnchanged: on a package with no denial, nettrap changes
// nothing in what go test prints, durations aside. (The same for the
// binary run directly is in TestAttribution.)
func TestCleanOutputUnchanged(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	root := fixtureRoot(t)
	for _, tc := range []struct {
		name, dir string
		args      []string
	}{
		{"go test -v ./clean", root, []string{"-v", "./clean"}},
		{"go test ./clean", root, []string{"./clean"}},
		{"go test in clean", filepath.Join(root, "clean"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Both at once: each waits mostly for the linker.
			var bare string
			var bareCode int
			var bareErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				bare, bareCode, bareErr = goRun(tc.dir, harness.GoEnv(), slices.Concat([]string{"test", "-count=1"}, tc.args)...)
			})
			trapped, code := goCmd(t, tc.dir, harness.GoEnv(), slices.Concat([]string{"test", "-count=1", "-exec", nettrap}, tc.args)...)
			wg.Wait()
			if bareErr != nil {
				t.Fatal(bareErr)
			}
			if bareCode != 0 || code != 0 {
				t.Errorf("exit %d without nettrap, %d with it, want 0", bareCode, code)
			}
			if !sameLines(bare, trapped) {
				t.Errorf("output differs\nwithout nettrap:\n%s\nwith -exec nettrap:\n%s", bare, trapped)
			}
		})
	}
}
