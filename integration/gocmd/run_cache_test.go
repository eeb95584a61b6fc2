package gocmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
)

// The packages of the cache tests: clean, leaky (swallows the error),
// parallel, and collection-time (TestMain) leaks.
var cachePkgs = []string{"./clean/", "./leaky/", "./parallel/", "./mainleak/"}

// cacheEnv is runmod.Env with a test cache of the test's own (seeded with
// built packages, no test result: runmod.Gocache).
func cacheEnv(t *testing.T, extra ...string) []string {
	return runmod.Env(append([]string{"GOCACHE=" + runmod.Gocache(t)}, extra...)...)
}

// pkgLine is the go command's line for package pkg (fixMod+pkg) in out:
// "ok  \tPKG\t(cached)", "FAIL\tPKG\t0.01s"; "" when there is none.
func pkgLine(out, pkg string) string {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) >= 3 && f[1] == fixMod+pkg && (strings.TrimSpace(f[0]) == "ok" || f[0] == "FAIL") {
			return line
		}
	}
	return ""
}

// wantPkg checks the outcome of pkg: ok or FAIL, cached or run.
func wantPkg(t *testing.T, run harness.Run, step, pkg, status string, cached bool) {
	t.Helper()
	line := pkgLine(run.Stdout, pkg)
	if line == "" {
		t.Errorf("%s: no line for %s:\n%s\n%s", step, pkg, run.Stdout, run.Stderr)
		return
	}
	if got := strings.TrimSpace(strings.Split(line, "\t")[0]); got != status {
		t.Errorf("%s: %s is %s, want %s: %q", step, pkg, got, status, line)
	}
	if got := strings.HasSuffix(line, "(cached)"); got != cached {
		t.Errorf("%s: %s cached %v, want %v: %q", step, pkg, got, cached, line)
	}
}

// TestRunGoTestCache is issue 12's "done when": a bare run's results are
// never taken for a confined run; a second confined run serves the clean
// packages from the cache and fails every leaky one again.
func TestRunGoTestCache(t *testing.T) {
	lab.SlowUnderOuter(t, "72 s")
	h := fakehost.Start(t, append(slices.Clone(blockedEndpoints), markedEndpoint)...)
	env := cacheEnv(t)
	// Bare: the leaks reach the fake hosts, and every package passes
	// (the tests swallow the errors), so all of them are cached.
	mark := h.Mark()
	bare := runModIn(t, env, "go", append([]string{"test"}, cachePkgs...)...)
	if bare.Code != 0 {
		t.Fatalf("bare run: exit %d, want 0\n%s%s", bare.Code, bare.Stdout, bare.Stderr)
	}
	if _, ok := h.WaitFor(mark, fakehost.To(leakEndpoint.Proto, leakEndpoint.Addr), harness.Timeout); !ok {
		t.Fatalf("the bare run's leak never reached %s: the fixture does not leak\n%s", leakEndpoint, h.Dump())
	}
	again := runModIn(t, env, "go", append([]string{"test"}, cachePkgs...)...)
	for _, p := range cachePkgs {
		wantPkg(t, again, "second bare run", strings.Trim(p, "./"), "ok", true)
	}

	for i, step := range []string{"first confined run", "second confined run"} {
		mark := h.Mark()
		run := runModGoTest(t, env, nil, cachePkgs...)
		if run.Code != 1 {
			t.Fatalf("%s: exit %d, want 1\n%s%s", step, run.Code, run.Stdout, run.Stderr)
		}
		harness.AssertNothingArrived(t, h, mark, blockedEndpoints...)
		wantPkg(t, run, step, "clean", "ok", i == 1)
		for _, p := range []string{"leaky", "parallel", "mainleak"} {
			wantPkg(t, run, step, p, "FAIL", false)
		}
		if i == 0 && strings.Contains(run.Stdout, "(cached)") {
			t.Errorf("%s took a bare run's result:\n%s", step, run.Stdout)
		}
		if !strings.Contains(run.Stderr, "nettrap: 5 outbound network attempts blocked in 3 packages") {
			t.Errorf("%s: summary headline missing:\n%s", step, run.Stderr)
		}
	}
}

// TestRunGoTestCacheMarked: a marked test's pass is cached, and served
// only under the same flags: another --allow, --mode or --allow-test
// runs it again.
func TestRunGoTestCacheMarked(t *testing.T) {
	lab.SlowUnderOuter(t, "41 s")
	h := fakehost.Start(t, markedEndpoint)
	env := cacheEnv(t)
	marked := []string{"-run", "^TestMarked$", "./leaky/"}
	steps := []struct {
		name   string
		flags  []string
		cached bool
	}{
		{"first run", nil, false},
		{"same flags", nil, true},
		{"another --allow", []string{"--allow", "192.0.2.0/24"}, false},
		{"--mode=audit", []string{"--mode=audit"}, false},
		{"another --allow-test", []string{"--allow-test", "^TestNone$"}, false},
		{"same flags again", nil, true},
	}
	for _, s := range steps {
		mark := h.Mark()
		run := runModGoTest(t, env, s.flags, marked...)
		if run.Code != 0 {
			t.Fatalf("%s: exit %d, want 0\n%s%s", s.name, run.Code, run.Stdout, run.Stderr)
		}
		wantPkg(t, run, s.name, "leaky", "ok", s.cached)
		// It runs (and reaches its host) unless served from the cache.
		got, err := h.Arrived(mark, markedEndpoint, harness.Timeout)
		if err != nil {
			t.Fatalf("%v:\n%s", err, h.Dump())
		}
		if reached := len(got) > 0; reached == s.cached {
			t.Errorf("%s: TestMarked reached its host %v, want %v", s.name, reached, !s.cached)
		}
	}
}

// TestRunGoTestCacheAuditMode: under --mode=audit a leaky test passes,
// but its pass is never cached: the would-deny record must come again.
func TestRunGoTestCacheAuditMode(t *testing.T) {
	h := fakehost.Start(t, leakEndpoint)
	env := cacheEnv(t)
	for _, step := range []string{"first audit run", "second audit run"} {
		mark := h.Mark()
		run := runModGoTest(t, env, []string{"--mode=audit"}, "-run", "^TestLeak$", "./leaky/")
		if run.Code != 0 {
			t.Fatalf("%s: exit %d, want 0\n%s%s", step, run.Code, run.Stdout, run.Stderr)
		}
		wantPkg(t, run, step, "leaky", "ok", false)
		if !strings.Contains(run.Stderr, "203.0.113.7:443") {
			t.Errorf("%s: the summary does not name the would-be denial:\n%s", step, run.Stderr)
		}
		// Audit mode lets it through: the test ran.
		if got, err := h.Arrived(mark, leakEndpoint, harness.Timeout); err != nil || len(got) == 0 {
			t.Errorf("%s: TestLeak did not reach its host under --mode=audit (%v)", step, err)
		}
	}
}

// TestRunGoTestCacheOff: --cache=off and go test -exec nettrap run every
// time, as before.
func TestRunGoTestCacheOff(t *testing.T) {
	env := cacheEnv(t)
	nt := harness.Nettrap(t)
	for _, step := range []string{"first", "second"} {
		run := runModGoTest(t, env, []string{"--cache=off"}, "./clean/")
		if run.Code != 0 {
			t.Fatalf("--cache=off %s: exit %d\n%s%s", step, run.Code, run.Stdout, run.Stderr)
		}
		wantPkg(t, run, "--cache=off "+step, "clean", "ok", false)
		run = runModIn(t, env, "go", "test", "-exec", nt, "./clean/")
		if run.Code != 0 {
			t.Fatalf("go test -exec nettrap %s: exit %d\n%s%s", step, run.Code, run.Stdout, run.Stderr)
		}
		wantPkg(t, run, "go test -exec nettrap "+step, "clean", "ok", false)
	}
}

// TestRunGoTestCacheForkingWrapper: a go command started by a wrapper
// that forks it (not nettrap's own child) cannot have its test binaries
// wrapped, and their calls would count as the toolchain's: they are not
// started at all (fail closed); a wrapper that execs works.
func TestRunGoTestCacheForkingWrapper(t *testing.T) {
	h := fakehost.Start(t, leakEndpoint)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, script string
		code         int
	}{
		{"forks", "#!/bin/sh\n'" + goBin + "' \"$@\"\n", 1},
		{"execs", "#!/bin/sh\nexec '" + goBin + "' \"$@\"\n", 1},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go"), []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		env := cacheEnv(t, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		mark := h.Mark()
		run := runModGoTest(t, env, nil, "-run", "^TestLeak$", "./leaky/")
		if run.Code != c.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", c.name, run.Code, c.code, run.Stdout, run.Stderr)
		}
		harness.AssertNothingArrived(t, h, mark, leakEndpoint)
		refused := strings.Contains(run.Stderr, "not nettrap's own child")
		failed := strings.Contains(run.Stdout, "--- FAIL: TestLeak")
		if c.name == "forks" && (!refused || failed) {
			t.Errorf("%s: the binary ran (TestLeak failed by nettrap %v) or was refused without a word (%v)\n%s%s", c.name, failed, refused, run.Stdout, run.Stderr)
		}
		if c.name == "execs" && (refused || !failed) {
			t.Errorf("%s: refused %v, TestLeak failed by nettrap %v; want it run and failed\n%s%s", c.name, refused, failed, run.Stdout, run.Stderr)
		}
	}
}
