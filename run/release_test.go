package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor"
)

// A run's directory is settled once: abort removes it until the run's
// end, which then settles it itself (finishRun), and abort leaves it.
func TestRunLogAbort(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	l, err := prepareAuditLog("")
	if err != nil {
		t.Fatal(err)
	}
	l.abort()
	if _, err := os.Stat(l.dir); !os.IsNotExist(err) {
		t.Errorf("the directory of a run aborted before its end: %v", err)
	}
	l, err = prepareAuditLog("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.remove()
	l.ended = true
	l.abort()
	if _, err := os.Stat(l.path); err != nil {
		t.Errorf("abort after the run's end removed its log: %v", err)
	}
}

// A setup that fails after the hub's files were made (here the guard: its
// resolv.conf cannot be read) gives them back: the run's directory goes,
// the summary file is closed.
func TestSetupErrorReleases(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	summary := filepath.Join(t.TempDir(), "summary.txt")
	err := Run(Options{Kind: Command, Argv: []string{"true"}, ResolvConf: t.TempDir(),
		Summary: summary, Emulate: supervisor.EmulateOff, Names: flagNames{}})
	var e *ExitError
	if !errors.As(err, &e) || e.Code != ExitCantRun || !strings.Contains(err.Error(), "read nameservers") {
		t.Fatalf("Run = %v, want status %d, read nameservers", err, ExitCantRun)
	}
	assertReleased(t, tmp, true, summary)
}

// A command that cannot start: the run's status is the exec's, the audit
// log and the summary file are closed, and the run's and the hub's
// directories are gone.
func TestStartErrorReleases(t *testing.T) {
	needEngine(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	noInterp := filepath.Join(dir, "nointerp")
	if err := os.WriteFile(noInterp, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log, summary := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "summary.txt")
	err := Run(Options{Kind: Command, Argv: []string{noInterp}, AuditLog: log,
		Summary: summary, Emulate: supervisor.EmulateOff, Names: flagNames{}})
	// The notify engine fails the start itself ("cannot start …"); the
	// ptrace engine's stub (auto's choice under a listener above, as in
	// nettrap's own suite run under nettrap) fails the exec and exits
	// with the same status.
	var e *ExitError
	if !errors.As(err, &e) || e.Code != ExitNotFound {
		t.Fatalf("Run = %v, want status %d", err, ExitNotFound)
	}
	if _, err := os.Stat(log); err != nil {
		t.Errorf("the audit log the user named: %v", err)
	}
	assertReleased(t, tmp, true, log, summary)
}

// An audit log on a full disk fails the run, with status 125 and the
// cause, though the command exited 0 (and its denial would make it 1);
// the hub and the log are closed all the same.
func TestAuditFullDiskFailsRun(t *testing.T) {
	needEngine(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(dialEnv, "203.0.113.7:80")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []Kind{Generic, Command} {
		err := Run(Options{Kind: kind, Argv: []string{self}, AuditLog: "/dev/full",
			Summary: "off", Emulate: supervisor.EmulateOff, Names: flagNames{}})
		var e *ExitError
		if !errors.As(err, &e) || e.Code != ExitCantRun ||
			!strings.Contains(err.Error(), "the audit log is incomplete") || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("kind %d: Run = %v, want status %d, the audit log is incomplete: no space left", kind, err, ExitCantRun)
		}
		// The run's directory stays where the run's end failed on the
		// log (runLog); the hub's goes.
		assertReleased(t, tmp, false, "/dev/full")
	}
}

// assertReleased fails t when this process still has one of files open,
// or a hub's directory is left in tmp (and a run's, with runDirGone).
func assertReleased(t *testing.T, tmp string, runDirGone bool, files ...string) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		p, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		for _, f := range files {
			if p == f {
				t.Errorf("%s is still open (fd %s)", f, fd.Name())
			}
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "nettrap-hub-*"))
	if runDirGone {
		runs, _ := filepath.Glob(filepath.Join(tmp, "nettrap-run-*"))
		left = append(left, runs...)
	}
	if len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// needEngine skips t where no engine can confine (as TestSessionStatus).
func needEngine(t *testing.T) {
	t.Helper()
	if _, err := supervisor.ChooseEngine(supervisor.EngineAuto); err != nil {
		if errors.Is(err, bpf.ErrListenerAbove) {
			t.Skipf("a seccomp listener is installed above this test, and a chain has only one: %v", err)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no engine can confine here: %v", err)
		}
		t.Skipf("no engine can confine here: %v", err)
	}
}
