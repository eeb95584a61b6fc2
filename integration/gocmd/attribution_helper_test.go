package gocmd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/prebuilt"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/teststream"
)

// The fixture module (integration/gocmd/testdata, its own go.mod, no
// dependencies): `./...` of this module skips it, so it is built here.
const fixtureModule = "example.com/fixtures"

func fixtureRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// goCmd runs the go command (unconfined) in dir and returns its combined
// output and exit code.
func goCmd(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	out, code, err := goRun(dir, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out, code
}

// goRun is goCmd for any goroutine: it returns what goCmd would fail with.
func goRun(dir string, env []string, args ...string) (string, int, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", 0, fmt.Errorf("go command: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	code := harness.ExitCode(err)
	if code < 0 {
		return "", 0, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return lab.DropNotice(string(out)), code, nil
}

// buildFixtures builds the test binary of every fixture package once
// (go test -c) into a directory of t's and returns it; with
// NETTRAP_TEST_PREBUILT set it returns that directory's fixtures instead.
func buildFixtures(t *testing.T, pkgs ...string) string {
	t.Helper()
	// Where there is no go command (the kernel matrix's guests), prebuilt
	// (NETTRAP_TEST_PREBUILT).
	if dir, used, err := prebuilt.Fixtures(pkgs...); used {
		if err != nil {
			t.Fatalf("building the fixtures: %v", err)
		}
		return dir
	}
	dir := t.TempDir()
	args := []string{"test", "-c", "-o", dir + "/"}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	if out, code := goCmd(t, fixtureRoot(t), harness.GoEnv(), args...); code != 0 {
		t.Fatalf("building the fixtures: exit %d\n%s", code, out)
	}
	return dir
}

// test2json is the go command's test2json, or the prebuilt one
// (NETTRAP_TEST_PREBUILT) where there is no go command.
var test2json = sync.OnceValues(func() (string, error) {
	if p, used, err := prebuilt.Lookup("test2json"); used {
		return p, err
	}
	out, err := exec.Command("go", "tool", "-n", "test2json").Output()
	return strings.TrimSpace(string(out)), err
})

// runConfined runs a fixture binary under nettrap (flags first) in the
// package's source directory, as the go command would.
func runConfined(t *testing.T, bin, pkg string, flags, args []string) harness.Run {
	t.Helper()
	sandbox.Require(t)
	argv := slices.Concat(flags, []string{bin}, args)
	// A run with records keeps its log in TMPDIR (TestBinarySummary):
	// the test's, not the machine's.
	return harness.RunIn(t, filepath.Join(fixtureRoot(t), pkg), harness.GoEnv("TMPDIR="+t.TempDir()), harness.Nettrap(t), argv...)
}

// outcome is what a run's output says, whatever the mode: the result of
// each test, the nettrap lines shown under each test ("" for the package),
// and the binary's final PASS or FAIL ("" when it printed none).
type outcome struct {
	results map[string]string
	lines   map[string][]string
	final   string
}

func newOutcome() outcome {
	return outcome{results: map[string]string{}, lines: map[string][]string{}}
}

// event is one test2json event.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// decodeJSON decodes a test2json stream strictly: every line one event.
func decodeJSON(t *testing.T, stream string) []event {
	t.Helper()
	var evs []event
	for line := range strings.Lines(stream) {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Action == "" {
			t.Fatalf("invalid test2json line %q: %v\nstream:\n%s", line, err, stream)
		}
		evs = append(evs, e)
	}
	return evs
}

// fromEvents reads the outcome of one package from test2json events.
// The test teststream.PackageTest is no test of the fixtures: it repeats
// the package's verdict lines for reporters that list failed tests
// (TestGotestsumPackageVerdict). It is left out, once its lines are
// checked to be the package's own; lines it has that the package has
// not are an owner no expectation names.
func fromEvents(evs []event, pkg string) outcome {
	o := newOutcome()
	inSummary := map[string]bool{} // by package
	var copied []string
	for _, e := range evs {
		if pkg != "" && e.Package != pkg {
			continue
		}
		if e.Test == teststream.PackageTest {
			if _, l, ok := strings.Cut(e.Output, "nettrap: "); ok && e.Action == "output" {
				copied = append(copied, strings.TrimSpace(l))
			}
			continue
		}
		if e.Action == "output" && inExecSummary(inSummary, e) {
			// Under go test -exec, each package's summary (its own
			// test: TestExecSummary) ends its output: not lines of
			// its tests, though test2json gives it to the last test
			// of a binary that died in it (a panic, os.Exit).
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test == "" {
				o.final = strings.ToUpper(e.Action)
			} else {
				o.results[e.Test] = strings.ToUpper(e.Action)
			}
		case "output":
			if _, l, ok := strings.Cut(e.Output, "nettrap: "); ok {
				o.lines[e.Test] = append(o.lines[e.Test], strings.TrimSpace(l))
			}
		}
	}
	if stray := notIn(copied, o.lines[""]); len(stray) > 0 {
		o.lines[teststream.PackageTest+" (not the package's lines)"] = stray
	}
	return o
}

// inExecSummary tells whether the package output e is part of the
// package's summary under go test -exec: from the headline that names
// an audit log to the totals line. in holds the state, by package.
func inExecSummary(in map[string]bool, e event) bool {
	switch {
	case strings.HasPrefix(e.Output, "nettrap: ") && strings.Contains(e.Output, "; audit log "):
		in[e.Package] = true
	case in[e.Package] && strings.HasPrefix(e.Output, "nettrap: total: "):
		in[e.Package] = false
		return true
	}
	return in[e.Package]
}

// notIn lists the lines of copied that are not, in their order, among
// own.
func notIn(copied, own []string) []string {
	var stray []string
	i := 0
	for _, l := range copied {
		j := slices.Index(own[i:], l)
		if j < 0 {
			stray = append(stray, l)
			continue
		}
		i += j + 1
	}
	return stray
}

// framedOutcome converts -test.v=test2json output with the go command's
// test2json, checking that every event is valid JSON.
func framedOutcome(t *testing.T, framed, pkg string) outcome {
	t.Helper()
	tool, err := test2json()
	if err != nil {
		t.Fatalf("go tool -n test2json: %v", err)
	}
	cmd := exec.Command(tool, "-p", pkg)
	cmd.Stdin = strings.NewReader(framed)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test2json: %v", err)
	}
	o := fromEvents(decodeJSON(t, string(out)), pkg)
	// test2json itself reports a stream without a final line as failed;
	// the binary printed none.
	if !hasFinal(framed) {
		o.final = ""
	}
	// Nor does it report a test whose --- FAIL a panic followed (the go
	// command fails it from the exit status): take the framed line.
	for name, res := range verboseOutcome(strings.ReplaceAll(framed, "\x16", "")).results {
		if _, ok := o.results[name]; !ok {
			o.results[name] = res
		}
	}
	return o
}

var (
	reportLine = regexp.MustCompile(`^( *)--- (PASS|FAIL|SKIP): (\S+) \(`)
	frameLine  = regexp.MustCompile(`^=== (?:RUN|PAUSE|CONT|NAME) +(\S*)`)
)

func hasFinal(out string) bool {
	for line := range strings.Lines(out) {
		l := strings.TrimPrefix(strings.TrimRight(line, "\n"), "\x16")
		if l == "PASS" || l == "FAIL" {
			return true
		}
	}
	return false
}

// verboseOutcome reads -test.v=true output: a nettrap line indented like
// t.Error belongs to the test named last by a === line; an unindented one
// to the package.
func verboseOutcome(out string) outcome {
	o := newOutcome()
	cur := ""
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if m := frameLine.FindStringSubmatch(line); m != nil {
			cur = m[1]
			continue
		}
		if m := reportLine.FindStringSubmatch(line); m != nil {
			o.results[m[3]] = m[2]
			continue
		}
		o.addLine(line, cur)
	}
	return o
}

// quietOutcome reads the output of a binary run without -v: only failed
// tests print a report, with their output indented under it and subtests'
// reports one level deeper.
func quietOutcome(out string) outcome {
	o := newOutcome()
	var stack []string // report at each indent level
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if m := reportLine.FindStringSubmatch(line); m != nil {
			depth := len(m[1]) / 4
			stack = append(stack[:min(depth, len(stack))], m[3])
			o.results[m[3]] = m[2]
			continue
		}
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 4
		owner := ""
		if depth > 0 && depth <= len(stack) {
			owner = stack[depth-1]
		}
		o.addLine(line, owner)
	}
	return o
}

func (o *outcome) addLine(line, indentedOwner string) {
	trimmed := strings.TrimLeft(line, " ")
	switch {
	case trimmed == "PASS" || trimmed == "FAIL":
		if line == trimmed {
			o.final = line
		}
	case strings.HasPrefix(trimmed, "nettrap: "):
		owner := ""
		if line != trimmed {
			owner = indentedOwner
		}
		o.lines[owner] = append(o.lines[owner], strings.TrimPrefix(trimmed, "nettrap: "))
	}
}

// arrival is a connection or datagram that must reach a fake host: tag is
// what the fixture sent (the name of the test that made it).
type arrival struct {
	ep  fakehost.Endpoint
	tag string
}

// checkArrivals proves that exactly the wanted arrivals reached the fake
// hosts on eps after mark (taken before the run). Each wanted one is
// awaited; then every endpoint is probed (see fakehost's Host.Arrived), so
// anything else the fixture sent is recorded by the time it is looked for.
func checkArrivals(t *testing.T, h *fakehost.Host, mark fakehost.Cursor, eps []fakehost.Endpoint, want []arrival) {
	t.Helper()
	wanted := func(r fakehost.Record) bool {
		return slices.ContainsFunc(want, func(a arrival) bool {
			return fakehost.To(a.ep.Proto, a.ep.Addr)(r) && string(r.Data) == a.tag
		})
	}
	for _, a := range want {
		if _, ok := h.WaitFor(mark, func(r fakehost.Record) bool {
			return fakehost.To(a.ep.Proto, a.ep.Addr)(r) && string(r.Data) == a.tag
		}, harness.Timeout); !ok {
			t.Errorf("allowed %s from %s never arrived:\n%s", a.ep, a.tag, h.Dump())
		}
	}
	for _, e := range eps {
		got, err := h.Arrived(mark, e, harness.Timeout)
		if err != nil {
			t.Fatalf("%v:\n%s", err, h.Dump())
		}
		for _, r := range got {
			if !wanted(r) {
				t.Errorf("LEAK: %s reached a fake host, and no marked test sent it", r)
			}
		}
	}
}

// diffOutcome compares what a run showed with what was expected: want's
// results (only the FAIL ones in quiet mode, which prints no other
// report), and for every owner exactly the expected nettrap lines.
func diffOutcome(got outcome, want expectation, quiet bool) []string {
	var errs []string
	wantResults := map[string]string{}
	for name, res := range want.results {
		if !quiet || res == "FAIL" {
			wantResults[name] = res
		}
	}
	for _, name := range sortedKeys(wantResults, got.results) {
		if g, w := got.results[name], wantResults[name]; g != w {
			errs = append(errs, fmt.Sprintf("%s: result %q, want %q", name, g, w))
		}
	}
	wantLines := want.lines
	if quiet && want.quietLines != nil {
		wantLines = want.quietLines
	}
	for _, owner := range sortedKeys(wantLines, got.lines) {
		errs = append(errs, matchLines(owner, got.lines[owner], wantLines[owner])...)
	}
	if got.final != want.final {
		errs = append(errs, fmt.Sprintf("final line %q, want %q", got.final, want.final))
	}
	return errs
}

// matchLines pairs the nettrap lines under owner with the patterns, in
// order: each pattern matches exactly one line.
func matchLines(owner string, got []string, want []*regexp.Regexp) []string {
	if owner == "" {
		owner = "(package)"
	}
	if len(got) != len(want) {
		return []string{fmt.Sprintf("%s: %d nettrap lines %q, want %d matching %q", owner, len(got), got, len(want), want)}
	}
	var errs []string
	for i, re := range want {
		if !re.MatchString(got[i]) {
			errs = append(errs, fmt.Sprintf("%s: nettrap line %q does not match %q", owner, got[i], re))
		}
	}
	return errs
}

// sortedKeys returns the keys of a and b, sorted, without duplicates.
func sortedKeys[A, B any](a map[string]A, b map[string]B) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
