package gocmd

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// argvForms are ways people run a test binary by hand, for the fixture
// package argv (custom flags -update, -name, -level; TestArgs checks the
// positional arguments; TestFlags and TestLevel pass only when asked).
var argvForms = [][]string{
	nil,
	{"-test.run", "TestFail"},
	{"-test.run=TestFail"},
	{"--test.run", "TestFail"},
	{"--test.run=TestFail"},
	{"-test.run", "TestPass|TestSkip"},
	{"-test.count", "2", "-test.v"},
	{"-test.count", "2", "-test.v", "-test.run", "TestPass"},
	{"-test.v", "-test.run", "TestFail"},
	{"-test.v=true", "-test.run", "Sub|Parallel", "-test.parallel", "1"},
	{"-test.v=test2json", "-test.run", "TestFail"},
	{"-test.v=test2json", "-test.run", "TestSub"},
	{"-test.v=false", "-test.run", "Fail|Sub", "-name", "fail-sub"},
	{"-test.v", "-test.v=false", "-test.run", "TestFail"},
	{"-test.v=test2json", "-test.v", "-test.run", "TestPass"},
	{"-test.v", "-test.v=test2json", "-test.run", "TestSkip"},
	{"-update", "-name", "x y", "-test.run", "TestFlags"},
	{"-update", "-test.run", "TestFlags"},
	{"-name", "x y", "-test.run", "TestFlags", "-update"},
	{"-name", "-test.v", "-test.run", "TestFlags"}, // a value that looks like a flag
	{"-update", "-test.v=test2json", "-test.run", "TestFlags"},
	{"-name", "x y", "-test.v=test2json", "-update", "-test.run", "TestFlags"},
	{"-name=-test.v", "-test.run=TestFlags"},
	{"-update", "-test.v", "-name", "x y", "-test.run", "TestFlags"},
	{"-level", "3", "-test.run", "TestLevel"},
	{"-level=3", "-test.run=TestLevel", "-test.v"},
	{"-name", "fail-sub", "-test.run", "TestSub", "-test.v"},
	{"-test.run", "TestArgs", "--", "pos1", "pos2"},
	{"-test.run", "TestArgs", "pos1", "pos2"},
	{"-test.run", "TestArgs", "pos1"},
	{"-test.run", "TestArgs", "pos1", "pos2", "-test.v"},      // -test.v is an argument
	{"-test.run", "TestArgs", "--", "-test.v=test2json", "x"}, // so is this
	{"--", "-test.run", "TestFail"},
	{"pos1", "pos2"},
	{"-test.short", "-test.run", "TestPass"},
	{"-test.short=true", "-test.run=TestPass", "-test.v=true"},
	{"-test.list", "."},
	{"-test.list", "Test", "-test.v"},
	{"-test.failfast"},
	{"-test.failfast", "-test.v"},
	{"-test.shuffle", "on", "-test.run", "TestPass|TestSkip|TestFail"},
	{"-test.skip", "TestFail", "-test.run", "TestFail|TestPass"},
	{"-test.fullpath", "-test.run", "TestFail"},
	{"-test.timeout", "1m", "-test.run", "TestPass", "-test.v"},
	{"-test.cpu", "1,2", "-test.run", "TestPass", "-test.v"},
	{"-test.run", "Example"},
	{"-test.run", "Example", "-test.v"},
	{"-test.bench", ".", "-test.run", "^$", "-test.benchtime", "1x"},
	{"-test.bench", ".", "-test.run", "^$", "-test.benchtime", "1x", "-test.v"},
	{"-h"},
	{"-help", "-test.v"},
	{"-test.run", "TestPass", "-nosuchflag"}, // exit 2
	{"-test.v=bogus"},
	{"---test.v"},
	{"-test.run"}, // no value
	{"-test.count", "x", "-test.v"},
	{"-test.v"},
	{"-test.v=1"}, // -test.v takes true, false or test2json only: exit 2
	{"-test.run=TestFail", "-test.v=test2json"},
	{"-test.paniconexit0", "-test.timeout=10m0s", "-test.run", "TestPass"}, // as go test passes them
	{"-test.run", "TestSub/c", "-name", "fail-sub"},
	{"-test.run", "TestSub/b", "-test.v"},
	{"-name", "fail-sub", "-test.v=test2json", "-test.run", "TestSub"},
	{"-update=true", "-name=x y", "-test.run=TestFlags"},
	{"-update", "-name", "x y", "-test.run", "TestFlags", "--", "pos1", "pos2"},
	{"-update", "-name", "x y", "-test.run", "TestFlags|TestArgs", "pos1", "pos2"},
	{"-test.benchmem", "-test.bench", ".", "-test.run", "^$", "-test.benchtime", "1x"},
	{"-test.run", "TestPass", "-"}, // "-" is a positional argument
	{"-test.run", "TestPass", "-test.v", "--"},
	// A -test.v certainly in effect is given the value test2json and its
	// output rendered back; the others are left to the binary.
	{"--test.v", "-test.run", "TestSub"},
	{"--test.v=false", "-test.run", "TestSub|TestFail", "-name=fail-sub"},
	{"-name=fail-sub", "-test.v", "-test.run", "TestSub"},
	{"-test.v", "-test.run", "TestFlags", "-update", "-name", "x y"},
	{"-test.v", "-name", "-test.v=false", "-test.run", "TestFlags"}, // -name takes it
	{"-test.v", "-update", "-test.v=false", "-test.run", "TestFlags"},
	{"-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true", "-test.run", "TestSub|TestParallel", "-name", "fail-sub"},
	{"-test.v=false", "-test.bench", ".", "-test.run", "^$", "-test.benchtime", "1x"},
	{"-test.v=false", "-test.run", "Example"},
	{"-test.v", "-test.run", "TestArgs", "pos1", "pos2"},
	{"-test.v", "-test.v=bogus"},
	{"-test.v=t"},
	{"-test.v=TRUE", "-test.run", "TestPass"},
}

// argvGuessed are forms whose output mode nettrap cannot know: whether
// -name takes the next argument as its value depends on how the package
// defines it. nettrap takes a word that starts with '-' for a flag (see
// gotest.verbosity); that decides the rendering only. Here it is wrong
// (-name is a string flag): the output is framed where the binary alone
// prints quiet, and everything else must be the same.
var argvGuessed = [][]string{
	{"-name", "-test.v=test2json", "-update", "-test.run", "TestFlags"},
	{"-name", "--test.v=test2json", "-test.run", "TestFlags|TestPass"},
}

// TestArgvDifferential runs the fixture binary by hand with every form in
// argvForms, bare and under nettrap: the exit status, which tests ran
// with which verdict, the output mode, and the output itself (durations
// and measurements aside) must be the same.
func TestArgvDifferential(t *testing.T) {
	sandbox.Require(t)
	bin := filepath.Join(buildFixtures(t, "argv"), "argv.test")
	forms := slices.Concat(argvForms, argvGuessed)
	for i, args := range forms {
		guessed := i >= len(argvForms)
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			bare := runCombined(t, bin, args)
			trapped := runConfined(t, bin, "argv", nil, args)
			if withoutSummary(t, trapped.Stderr) != "" {
				t.Errorf("nettrap wrote to stderr, beyond the run's summary:\n%s", trapped.Stderr)
			}
			if bare.Code != trapped.Code {
				t.Errorf("exit status %d bare, %d under nettrap", bare.Code, trapped.Code)
			}
			b, n := verdicts(bare.Stdout), verdicts(trapped.Stdout)
			if guessed {
				// The quiet output reports only failures.
				n = slices.DeleteFunc(n, func(v string) bool { return !strings.HasPrefix(v, "FAIL ") })
			}
			if !slices.Equal(b, n) || len(b) == 0 && bare.Code == 1 {
				t.Errorf("verdicts differ\nbare:    %q\nnettrap: %q", b, n)
			}
			bm, nm := modeOf(bare.Stdout), modeOf(trapped.Stdout)
			switch {
			case guessed && (bm != "quiet" || nm != "framed"):
				t.Errorf("output mode %s bare, %s under nettrap; want quiet and framed (the documented guess)", bm, nm)
			case guessed:
			case bm != nm:
				t.Errorf("output mode %s bare, %s under nettrap", bm, nm)
			case !slices.Equal(lineSet(bare.Stdout), lineSet(trapped.Stdout)):
				t.Errorf("output differs")
			}
			if t.Failed() {
				t.Logf("bare output:\n%s\nnettrap output:\n%s", bare.Stdout, trapped.Stdout)
			}
		})
	}
}

// runCombined runs the fixture binary without nettrap, its stdout and
// stderr on one pipe as nettrap gives it.
func runCombined(t *testing.T, bin string, args []string) harness.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = filepath.Join(fixtureRoot(t), "argv"), harness.GoEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := harness.ExitCode(cmd.Run())
	if code < 0 {
		t.Fatalf("%s %q did not exit normally\n%s", bin, args, out.String())
	}
	return harness.Run{Stdout: out.String(), Code: code}
}

// modeOf: framed (-test.v=test2json), verbose (-test.v) or quiet.
func modeOf(out string) string {
	switch {
	case strings.Contains(out, "\x16"):
		return "framed"
	case regexp.MustCompile(`(?m)^=== RUN `).MatchString(out):
		return "verbose"
	}
	return "quiet"
}

var verdictLine = regexp.MustCompile(`(?m)^\x16?( *)--- (PASS|FAIL|SKIP): (\S+) `)

// verdicts lists "result test" for every report, sorted (-test.count and
// parallel tests repeat and reorder them).
func verdicts(out string) []string {
	var vs []string
	for _, m := range verdictLine.FindAllStringSubmatch(out, -1) {
		vs = append(vs, m[2]+" "+m[3])
	}
	slices.Sort(vs)
	return vs
}

var unstable = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\(\d+\.\d+s\)`), "(D)"},
	{regexp.MustCompile(`\s+\d+\s+[\d.]+ ns/op`), " N ns/op"},
	{regexp.MustCompile(`\s+\d+ (B|allocs)/op`), " N $1/op"},
	{regexp.MustCompile(`-test\.shuffle \d+`), "-test.shuffle SEED"},
}

// lineSet is the output's lines, sorted (parallel tests interleave in
// either order), with durations, measurements and the shuffle seed masked.
func lineSet(out string) []string {
	var lines []string
	for line := range strings.Lines(out) {
		for _, u := range unstable {
			line = u.re.ReplaceAllString(line, u.repl)
		}
		lines = append(lines, strings.TrimRight(line, "\n"))
	}
	slices.Sort(lines)
	return lines
}

// TestArgvFramingOnce: the real test binary gets -test.v=test2json once,
// under go test -exec nettrap and nettrap -- go test, with -json (the go
// command passes it), -v (nettrap gives -test.v=true that value) and
// neither (nettrap adds its own).
func TestArgvFramingOnce(t *testing.T) {
	lab.SlowUnderOuter(t, "11 s")
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	for _, goFlags := range [][]string{{"-json"}, {"-v"}, nil} {
		for _, how := range []struct {
			name string
			argv []string
		}{
			{"exec", slices.Concat([]string{"go", "test", "-count=1", "-exec", nettrap}, goFlags, []string{"./osargs"})},
			{"wrapped", slices.Concat([]string{nettrap, "--summary=off", "--", "go", "test", "-count=1"}, goFlags, []string{"./osargs"})},
		} {
			t.Run(how.name+strings.Join(goFlags, ""), func(t *testing.T) {
				run := harness.RunIn(t, fixtureRoot(t), harness.GoEnv(), how.argv[0], how.argv[1:]...)
				if run.Code != 0 {
					t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s", how.argv, run.Code, run.Stdout, run.Stderr)
				}
				if goFlags != nil && !strings.Contains(run.Stdout, "test2json=1 ") {
					t.Errorf("%q: the binary's arguments not shown with test2json=1:\n%s", how.argv, run.Stdout)
				}
			})
		}
	}
}
