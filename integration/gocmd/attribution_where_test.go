package gocmd

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// updateWhere rewrites testdata/where.golden from a run (go test
// -run TestAttributionWhere -update-where ./integration/gocmd/), to be read
// and committed by hand.
var updateWhere = flag.Bool("update-where", false, "rewrite testdata/where.golden")

// whereEndpoints are what packages where and wherecgo dial (see their
// tests), all served by fake hosts so that a leak is recorded.
func whereEndpoints() []fakehost.Endpoint {
	var eps []fakehost.Endpoint
	for p := 5001; p <= 5008; p++ {
		eps = append(eps, tcpEP(fxExternal, p))
	}
	for p := 5011; p <= 5025; p++ {
		eps = append(eps, tcpEP(fxExternal, p))
	}
	return append(eps, tcpEP(fxPrivate, 5009))
}

// TestAttributionWhere: the location of every blocked attempt, and the
// test it is blamed on, golden. Packages where and wherecgo make one
// attempt each from a different place (the test, a helper two calls
// deep, a method, a closure, a goroutine the test waits for, one left
// running into a later test, a parallel subtest, TestMain, C code);
// package whereblame from parallel tests each pinned by its own frames
// (and a parallel test's subtest), and from closures a test stored that
// a later test calls from goroutines; package wheremain from a package
// main's test (the line says main.ping). They run as CI runs them:
// `nettrap -- go test -json` in GitHub Actions, with an audit log. The
// lines under each test, the audit records' where, called_from,
// goroutine, started_by and the stack's frames in the fixture module,
// and the annotations' file= and line= must be exactly
// testdata/where.golden; again for a binary built with -ldflags='-s -w'
// (Go keeps .gopclntab), and, with the engine variants of .ci/run,
// under the ptrace engine. Under each line, the module's frames -json
// shows (at most three, then the called-from frame). Nothing arrives at
// the fake hosts.
func TestAttributionWhere(t *testing.T) {
	sandbox.Require(t)
	requireCgo(t)
	golden := filepath.Join(fixtureRoot(t), "where.golden")
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"plain", nil},
		{"stripped", []string{"-ldflags=-s -w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two runs, as GitHub shows at most 10 annotations of one:
			// the locations, then the blame (package whereblame).
			h := fakehost.Start(t, whereEndpoints()...)
			got := whereRun(t, h, tc.flags, "where", "wherecgo") + "\n" + whereRun(t, h, tc.flags, "whereblame", "wheremain")
			matchGolden(t, golden, got, *updateWhere && tc.name == "plain", "update-where", "locations", "")
			checkReadmeWhere(t, got)
		})
	}
}

// requireCgo skips t, saying why (failing when CI=true), where the go
// command cannot build cgo code.
func requireCgo(t *testing.T) {
	t.Helper()
	out, _ := goCmd(t, fixtureRoot(t), harness.GoEnv(), "env", "CGO_ENABLED")
	if strings.TrimSpace(out) == "1" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("cgo is off (no C compiler?): package wherecgo cannot be built (CI=true, so this is fatal)")
	}
	t.Skip("cgo is off (no C compiler?): package wherecgo cannot be built")
}

// whereRun runs packages pkgs (of the fixture module) under nettrap --
// go test and returns what the golden file holds of them.
func whereRun(t *testing.T, h *fakehost.Host, goFlags []string, pkgs ...string) string {
	eps := whereEndpoints()
	mark := h.Mark()
	root := fixtureRoot(t)
	log := harness.AuditPath(t)
	env := harness.GoEnv("GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+root,
		"GITHUB_STEP_SUMMARY="+filepath.Join(t.TempDir(), "summary.md"))
	// -parallel=4: package whereblame's three parallel tests wait for
	// each other.
	args := slices.Concat([]string{"--audit-log", log, "--", "go", "test", "-count=1", "-json", "-parallel=4"}, goFlags)
	for _, pkg := range pkgs {
		args = append(args, "./"+pkg)
	}
	run := harness.RunIn(t, root, env, harness.Nettrap(t), args...)
	if run.Code != 1 {
		t.Errorf("exit %d, want 1\nstderr:\n%s", run.Code, run.Stderr)
	}
	checkArrivals(t, h, mark, eps, nil)
	var b strings.Builder
	b.WriteString("# lines: what each test's output shows (" + fixtureModule + "/...), and the frames under each (-json)\n")
	evs := decodeJSON(t, lab.DropNotice(run.Stdout))
	for _, pkg := range pkgs {
		lines := linesWithFrames(evs, fixtureModule+"/"+pkg)
		for _, test := range slices.Sorted(maps.Keys(lines)) {
			for _, l := range lines[test] {
				fmt.Fprintf(&b, "%s %s: %s\n", pkg, orPackage(test), unmapped(l))
			}
		}
	}
	b.WriteString("\n# annotations: file= and line= of each (GITHUB_WORKSPACE is the fixture module)\n")
	var notes []string
	for _, l := range harness.LinesWithPrefix(run.Stderr, "::error ") {
		props, _, _ := strings.Cut(strings.TrimPrefix(l, "::error "), "::")
		var keep []string
		for _, p := range strings.Split(props, ",") {
			if strings.HasPrefix(p, "file=") || strings.HasPrefix(p, "line=") || strings.HasPrefix(p, "title=") {
				keep = append(keep, p)
			}
		}
		notes = append(notes, strings.Join(keep, ","))
	}
	slices.Sort(notes)
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	b.WriteString("\n# audit records: origin, and the stack's frames in the fixture module\n")
	b.WriteString(whereRecords(t, log, root))
	return b.String()
}

// shownFrame is a frame shown under a verdict's line ("where/where.go:22
// (where.Fetch)"), or "..." for frames left out.
var shownFrame = regexp.MustCompile(`^\s+(\S+:\d+ \(.+\)|\.\.\.)$`)

// linesWithFrames are the nettrap lines in package pkg's events, by
// test, each followed by the frames shown under it, "\t" and the frame.
func linesWithFrames(evs []event, pkg string) map[string][]string {
	lines := map[string][]string{}
	last := map[string]bool{} // the test's last output was a nettrap line or a frame
	for _, e := range evs {
		if e.Package != pkg || e.Action != "output" {
			continue
		}
		out := strings.TrimRight(e.Output, "\n")
		if _, l, ok := strings.Cut(out, "nettrap: "); ok {
			lines[e.Test] = append(lines[e.Test], strings.TrimSpace(l))
			last[e.Test] = true
			continue
		}
		if last[e.Test] && shownFrame.MatchString(out) {
			lines[e.Test] = append(lines[e.Test], "\t"+strings.TrimSpace(out))
			continue
		}
		last[e.Test] = false
	}
	return lines
}

// whereRecords words the denied records of log: dest, test, the origin's
// fields and the stack's frames whose function is the fixture module's,
// main.F of package wheremain too (the others, the standard library's
// and cgo's generated wrappers', vary with the Go version).
func whereRecords(t *testing.T, log, root string) string {
	var out []string
	for _, r := range rawRecords(t, log) {
		if r["decision"] != "denied" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%v %v:", unmapped(fmt.Sprint(r["dest"])), r["test"])
		for _, k := range []string{"where", "called_from", "goroutine", "where_started", "created_in", "started_by", "started_by_ended", "unowned", "stack_stop"} {
			if v, ok := r[k]; ok {
				fmt.Fprintf(&b, " %s=%s", k, frameText(v, root))
			}
		}
		b.WriteString("\n")
		stack, _ := r["stack"].([]any)
		for _, f := range stack {
			m, _ := f.(map[string]any)
			fn, _ := m["func"].(string)
			file, _ := m["file"].(string)
			// cgo's generated wrapper's line varies with the Go version;
			// package wheremain's functions are main.F, the test
			// binary's generated main is not the fixture's.
			fixture := strings.HasPrefix(fn, fixtureModule+"/") || strings.HasPrefix(fn, "main.") && !strings.HasSuffix(file, "_testmain.go")
			if fixture && !strings.HasPrefix(file, "_cgo_") {
				fmt.Fprintf(&b, "\t%s\n", frameText(f, root))
			}
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return strings.Join(out, "")
}

// frameText is an audit frame as "func file:line" (file relative to root
// when under it), or any other value as JSON.
func frameText(v any, root string) string {
	m, ok := v.(map[string]any)
	if !ok {
		j, _ := json.Marshal(v)
		return string(j)
	}
	file, _ := m["file"].(string)
	if rel, err := filepath.Rel(root, file); err == nil && filepath.IsAbs(file) && !strings.HasPrefix(rel, "..") {
		file = rel
	}
	return fmt.Sprintf("%v %s:%v", m["func"], file, m["line"])
}

// unmapped writes a v4-mapped destination as IPv4 (a dual-stack socket
// carries one or the other).
func unmapped(s string) string {
	return v4Mapped.ReplaceAllString(s, "$1:")
}

var v4Mapped = regexp.MustCompile(`\[::ffff:([0-9.]+)\]:`)

func orPackage(test string) string {
	if test == "" {
		return "(package)"
	}
	return test
}

// checkReadmeWhere: the README's lines of this fixture (under "Reading a
// failure") are what the run printed.
func checkReadmeWhere(t *testing.T, got string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(readme)) {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "nettrap: ")
		if !ok || !strings.Contains(text, " at where/") {
			continue
		}
		n++
		if !strings.Contains(got, ": "+text+"\n") {
			t.Errorf("the README shows %q, which the run does not print", line)
		}
	}
	if n == 0 {
		t.Error("the README shows no line of package where")
	}
}

// TestAttributionWhereCommand: a Go program that is not a test, run as
// `nettrap -- PROGRAM` (generic mode): the line names the process and
// where in its own code the call was made (package main's file, relative
// to the module's root); nothing arrives.
func TestAttributionWhereCommand(t *testing.T) {
	sandbox.Require(t)
	root := fixtureRoot(t)
	bin := filepath.Join(t.TempDir(), "wherecmd")
	if out, code := goCmd(t, root, harness.GoEnv(), "build", "-o", bin, "./wherecmd"); code != 0 {
		t.Fatalf("go build: exit %d\n%s", code, out)
	}
	eps := []fakehost.Endpoint{tcpEP(fxExternal, 5010)}
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	run := harness.RunIn(t, root, harness.GoEnv(), harness.Nettrap(t), "--", bin)
	if run.Code != 3 {
		t.Errorf("exit %d, want the program's 3 (its dial failed)\nstderr:\n%s", run.Code, run.Stderr)
	}
	want := regexp.MustCompile(`^nettrap: Outbound network blocked: connect tcp (203\.0\.113\.7|\[::ffff:203\.0\.113\.7\]):5010 \(external\) by pid \d+ wherecmd at wherecmd/main\.go:27 \(main\.dial\)$`)
	lines := harness.BlockedLines(lab.DropNotice(run.Stderr))
	if len(lines) != 1 || !want.MatchString(lines[0]) {
		t.Errorf("lines %q, want one matching %s", lines, want)
	}
	checkArrivals(t, h, mark, eps, nil)
}
