package gocmd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/tmpdir"
)

// Like env(1), timeout(1) and Docker: 127 for a command not found, 126 for
// one found but not executable; 125 stays nettrap's own.
func TestCLIExitStatusNotFoundNotExecutable(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "nettrap-noexec-script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noInterp := filepath.Join(dir, "nointerp")
	if err := os.WriteFile(noInterp, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"--", "/nonexistent/program"}, 127, "no such file"},
		{[]string{"--", "nettrap-no-such-command"}, 127, "command not found"},
		{[]string{"--", noInterp}, 127, "no such file"},
		{[]string{"--", script}, 126, "permission denied"},
		{[]string{"--", dir}, 126, "is a directory"},
		{[]string{"--mode=bogus", "--", "/bin/true"}, 125, "bad --mode"},
	} {
		run := harness.RunNettrap(t, tc.args...)
		if run.Code != tc.want || !strings.Contains(run.Stderr, tc.says) {
			t.Errorf("nettrap %q: exit %d, want %d, with %q in stderr:\n%s", tc.args, run.Code, tc.want, tc.says, run.Stderr)
		}
	}
	// The same name on PATH, not executable: 126, as execvp says.
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	if run := harness.RunNettrap(t, "--", "nettrap-noexec-script"); run.Code != 126 {
		t.Errorf("non-executable command on PATH: exit %d, want 126\n%s", run.Code, run.Stderr)
	}
}

// Help and version go to stdout with status 0 when asked for; a usage
// error goes to stderr with 125.
func TestCLIHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		run := harness.RunNettrap(t, args...)
		if run.Code != 0 || !strings.Contains(run.Stdout, "--allow CIDR[:PORT]") || run.Stderr != "" {
			t.Errorf("nettrap %q: exit %d\nstdout: %s\nstderr: %s", args, run.Code, run.Stdout, run.Stderr)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		run := harness.RunNettrap(t, args...)
		if run.Code != 0 || !strings.HasPrefix(run.Stdout, "nettrap ") || !strings.Contains(run.Stdout, "kernel:") {
			t.Errorf("nettrap %q: exit %d\nstdout: %s\nstderr: %s", args, run.Code, run.Stdout, run.Stderr)
		}
	}
	if run := harness.RunNettrap(t, "report", "--help"); run.Code != 0 || !strings.Contains(run.Stdout, "--format") || run.Stderr != "" {
		t.Errorf("nettrap report --help: exit %d\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	run := harness.RunNettrap(t, "--no-such-flag", "--", "/bin/true")
	if run.Code != 125 || run.Stdout != "" || !strings.Contains(run.Stderr, "unknown flag: --no-such-flag") {
		t.Errorf("bad flag: exit %d\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	// A mistyped flag is refused alike, naming the flag it likely meant.
	run = harness.RunNettrap(t, "--alow", "10.0.0.0/8", "--", "go", "test")
	if want := "nettrap: unknown flag: --alow (did you mean --allow?) (see nettrap --help)\n"; run.Code != 125 || run.Stdout != "" || run.Stderr != want {
		t.Errorf("mistyped flag: exit %d\nstdout: %s\nstderr: %q, want %q", run.Code, run.Stdout, run.Stderr, want)
	}
}

// Variables: a bad value names the variable; a misspelled one is warned
// about, once.
func TestCLIEnvironment(t *testing.T) {
	t.Setenv("NETTRAP_MODE", "bogus")
	run := harness.RunNettrap(t, "--", "/bin/true")
	if run.Code != 125 || !strings.Contains(run.Stderr, `bad NETTRAP_MODE "bogus"`) || strings.Contains(run.Stderr, "--mode") {
		t.Errorf("NETTRAP_MODE=bogus: exit %d, stderr: %s", run.Code, run.Stderr)
	}
	os.Unsetenv("NETTRAP_MODE")
	t.Setenv("NETTRAP_MOD", "audit")
	run = harness.RunNettrap(t, "--", "/bin/true")
	want := "nettrap: unknown variable NETTRAP_MOD (did you mean NETTRAP_MODE?)\n"
	if run.Code != 0 || strings.Count(run.Stderr, want) != 1 {
		t.Errorf("NETTRAP_MOD: exit %d, stderr %q, want one %q", run.Code, run.Stderr, want)
	}
	run = harness.RunNettrap(t, "--resolv-conf", "/nonexistent", "--", "/bin/true")
	if run.Code != 125 || !strings.Contains(run.Stderr, "bad --resolv-conf: open /nonexistent") {
		t.Errorf("--resolv-conf /nonexistent: exit %d, stderr: %s", run.Code, run.Stderr)
	}
}

// A SIGKILLed nettrap takes the whole confined tree with it: the child
// and its background job.
func TestCLIKilledTakesTree(t *testing.T) {
	sandbox.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Nettrap(t), "--", "/bin/sh", "-c", `sleep 300 & echo $$ $!; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pids []int
	for _, f := range strings.Fields(line) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
			t.Cleanup(func() { syscall.Kill(p, syscall.SIGKILL) })
		}
	}
	if err != nil || len(pids) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no pids from the shell: %q %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitGone(ctx, t, pids...)
}

// The same under `nettrap -- go test`: the go command, the inner nettrap
// and the stuck test binary go too.
func TestCLIKilledTakesGoTest(t *testing.T) {
	r := startStuck(t, true)
	inner := parentOf(t, r.testPID)
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	waitGone(ctx, t, r.testPID, inner)
}

// waitGone polls /proc (a bounded poll, not a timing assertion) until
// every pid is gone or a zombie.
func waitGone(ctx context.Context, t *testing.T, pids ...int) {
	t.Helper()
	for _, p := range pids {
		for running(p) && ctx.Err() == nil {
			harness.Pause(ctx)
		}
		if running(p) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
			t.Errorf("pid %d (%q) outlived the SIGKILLed nettrap", p, b)
		}
	}
}

// sleepingRun starts `nettrap -- sh` that sleeps, with env, and returns
// once the shell runs (the run's directory is made before).
func sleepingRun(t *testing.T, env []string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, harness.Nettrap(t), "--", "/bin/sh", "-c", `echo ready; exec sleep 300`)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the confined shell said %q (%v)", line, err)
	}
	return cmd
}

// A SIGKILLed run cannot remove its directories (the run's, the hub's):
// the next run does, and leaves those of a run still going alone.
func TestCLIKilledRunDirRemovedLater(t *testing.T) {
	sandbox.Require(t)
	tmp := t.TempDir()
	env := append(harness.GoEnv(), "TMPDIR="+tmp)
	killed := sleepingRun(t, env)
	killedDirs := tmpDirs(t, tmp)
	if len(killedDirs) != 2 {
		t.Fatalf("directories %q, want the running run's and its hub's", killedDirs)
	}
	live := sleepingRun(t, env)
	for _, d := range killedDirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("a new run removed a directory of a run still going: %v", err)
		}
	}
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	for _, d := range killedDirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the killed run's %s is gone already (%v): nothing to test", d, err)
		}
	}
	liveDirs := slices.DeleteFunc(tmpDirs(t, tmp), func(d string) bool { return slices.Contains(killedDirs, d) })
	if run := runModIn(t, env, harness.Nettrap(t), "--", "/bin/true"); run.Code != 0 {
		t.Fatalf("next run: exit %d\n%s", run.Code, run.Stderr)
	}
	for _, d := range killedDirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the killed run's %s is still there after the next run (%v)", d, err)
		}
	}
	if left := tmpDirs(t, tmp); !slices.Equal(left, liveDirs) || len(left) != 2 {
		t.Errorf("directories after the next run %q, want the live run's %q", left, liveDirs)
	}
	live.Process.Signal(syscall.SIGTERM)
	live.Wait()
}

// tmpDirs lists the nettrap-run-* and nettrap-hub-* directories in dir.
func tmpDirs(t *testing.T, dir string) []string {
	t.Helper()
	hubs, err := filepath.Glob(filepath.Join(dir, "nettrap-hub-*"))
	if err != nil {
		t.Fatal(err)
	}
	all := append(tmpRuns(t, dir), hubs...)
	slices.Sort(all)
	return all
}

// tmpRuns lists the nettrap-run-* directories in dir.
func tmpRuns(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "nettrap-run-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A clean run leaves no temporary directory behind; one with something
// to look at keeps its log, and the summary says where, until tmpdir.Keep
// later runs kept theirs.
func TestCLITemporaryLogs(t *testing.T) {
	tmp := t.TempDir()
	env := runmod.Env("TMPDIR=" + tmp)
	run := runModGoTest(t, env, nil, "-count=1", "./clean/")
	if run.Code != 0 {
		t.Fatalf("clean run: exit %d\n%s", run.Code, run.Stderr)
	}
	if left := tmpRuns(t, tmp); len(left) != 0 || strings.Contains(run.Stderr, "audit log") {
		t.Errorf("a clean run left %q, summary: %s", left, run.Stderr)
	}
	if run := runModIn(t, env, harness.Nettrap(t), "--", "/bin/true"); run.Code != 0 {
		t.Errorf("generic run: exit %d\n%s", run.Code, run.Stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "nettrap-*")); len(left) != 0 {
		t.Errorf("a generic run left %q", left)
	}
	run = runModGoTest(t, env, nil, "-count=1", "./leaky/")
	left := tmpRuns(t, tmp)
	if run.Code != 1 || len(left) != 1 {
		t.Fatalf("leaky run: exit %d, left %q\n%s", run.Code, left, run.Stderr)
	}
	log := filepath.Join(left[0], "audit.jsonl")
	if !strings.Contains(run.Stderr, "audit log "+log) || len(readRunAudit(t, log)) == 0 {
		t.Errorf("the kept log %s is not named in the summary or empty:\n%s", log, run.Stderr)
	}
	// It stays while it is one of the tmpdir.Keep newest kept logs: once
	// that many later runs kept theirs (made here, kept an hour later),
	// the next run removes it, and leaves theirs.
	var later []string
	for i := range tmpdir.Keep {
		d := filepath.Join(tmp, fmt.Sprintf("nettrap-run-later%d", i))
		at := time.Now().Add(time.Hour)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, tmpdir.KeptFile), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(d, tmpdir.KeptFile), at, at); err != nil {
			t.Fatal(err)
		}
		later = append(later, d)
	}
	if run := runModIn(t, env, harness.Nettrap(t), "--", "/bin/true"); run.Code != 0 {
		t.Fatalf("next run: exit %d\n%s", run.Code, run.Stderr)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("the kept log's directory %s is still there after %d later ones (%v)", left[0], tmpdir.Keep, err)
	}
	if got := tmpRuns(t, tmp); !slices.Equal(got, later) {
		t.Errorf("directories %q, want the %d later kept ones", got, tmpdir.Keep)
	}
}

// go test -exec nettrap runs each test binary in its package directory:
// a relative NETTRAP_AUDIT_LOG (or NETTRAP_SUMMARY) is refused, not
// scattered.
func TestCLIRelativeAuditLogUnderExec(t *testing.T) {
	env := runmod.Env("NETTRAP_AUDIT_LOG=rel.jsonl")
	run := runModIn(t, env, "go", "test", "-count=1", "-exec", harness.Nettrap(t), "./clean/", "./leaky/")
	if run.Code == 0 || !strings.Contains(run.Stdout+run.Stderr, `NETTRAP_AUDIT_LOG "rel.jsonl" is relative`) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	for _, pkg := range []string{".", "clean", "leaky"} {
		if _, err := os.Stat(filepath.Join(runmod.Dir(t), pkg, "rel.jsonl")); err == nil {
			os.Remove(filepath.Join(runmod.Dir(t), pkg, "rel.jsonl"))
			t.Errorf("a log was written in %s", pkg)
		}
	}
	// Each package's summary would go to a file of its own too.
	run = runModIn(t, runmod.Env("NETTRAP_SUMMARY=rel.txt"), "go", "test", "-count=1", "-exec", harness.Nettrap(t), "./leaky/")
	if run.Code == 0 || !strings.Contains(run.Stdout+run.Stderr, `NETTRAP_SUMMARY "rel.txt" is relative`) {
		t.Errorf("relative summary: exit %d\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	if _, err := os.Stat(filepath.Join(runmod.Dir(t), "leaky", "rel.txt")); err == nil {
		os.Remove(filepath.Join(runmod.Dir(t), "leaky", "rel.txt"))
		t.Error("a summary was written in leaky")
	}
	// nettrap -- go test makes it absolute: one log where it was meant.
	dir := t.TempDir()
	env = runmod.Env("NETTRAP_AUDIT_LOG=rel.jsonl")
	run = runModIn(t, env, "/bin/sh", "-c", `cd "$1" && shift && exec "$@"`, "sh", dir,
		harness.Nettrap(t), "--", "go", "-C", runmod.Dir(t), "test", "-count=1", "./leaky/")
	if run.Code != 1 || len(readRunAudit(t, filepath.Join(dir, "rel.jsonl"))) == 0 {
		t.Errorf("nettrap -- go test with a relative log: exit %d\n%s", run.Code, run.Stderr)
	}
}

// A run that runs no test binary (go test -c, a package with no tests)
// ends with no summary and no log; one that ran a binary has its line.
func TestCLIGoTestRanNothing(t *testing.T) {
	tmp := t.TempDir()
	env := runmod.Env("TMPDIR=" + tmp)
	out := filepath.Join(tmp, "clean.test")
	run := runModGoTest(t, env, nil, "-c", "-o", out, "./clean/")
	if run.Code != 0 || len(nettrapLines(run.Stderr)) != 0 {
		t.Errorf("go test -c: exit %d, nettrap said:\n%s", run.Code, run.Stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("no test binary: %v", err)
	}
	run = runModGoTest(t, env, []string{"--audit-log", filepath.Join(tmp, "user.jsonl")}, "-count=1", "./fix/")
	if run.Code != 0 || len(nettrapLines(run.Stderr)) != 0 || !strings.Contains(run.Stdout, "[no test files]") {
		t.Errorf("go test on a package with no tests: exit %d, nettrap said:\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	run = runModGoTest(t, env, nil, "-count=1", "-run=NoSuchTest", "./clean/")
	if lines := nettrapLines(run.Stderr); run.Code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "no outbound network attempt blocked") {
		t.Errorf("a run of a test binary: exit %d, nettrap said:\n%s", run.Code, run.Stderr)
	}
	if left := tmpRuns(t, tmp); len(left) != 0 {
		t.Errorf("runs left %q", left)
	}
}
