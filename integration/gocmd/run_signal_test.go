package gocmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// stuckRun is `nettrap -- go test -v ./stuck/` running, its test binary
// blocked for good.
type stuckRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	testPID        int
}

func startStuck(t *testing.T, ownGroup bool) *stuckRun {
	t.Helper()
	sandbox.Require(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	r := &stuckRun{}
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	t.Cleanup(cancel)
	r.cmd = exec.CommandContext(ctx, harness.Nettrap(t), "--audit-log", harness.AuditPath(t), "--", "go", "test", "-count=1", "-v", "./stuck/")
	r.cmd.Dir = runmod.Dir(t)
	r.cmd.Env = runmod.Env("NTRUNFIX_PIDFILE=" + pidfile)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if ownGroup {
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
	for ctx.Err() == nil {
		b, err := os.ReadFile(pidfile)
		if err == nil && len(b) > 0 {
			r.testPID, err = strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		harness.Pause(ctx)
	}
	t.Fatalf("the stuck test never started\nstdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
	return nil
}

func (r *stuckRun) wait(t *testing.T) int {
	t.Helper()
	code := harness.ExitCode(r.cmd.Wait())
	if code < 0 {
		t.Fatalf("nettrap did not exit normally: %v\nstderr: %s", r.cmd.ProcessState, r.stderr.String())
	}
	return code
}

// running: pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && !strings.HasPrefix(s[i+1:], " Z")
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	pp, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestRunGoTestTimeoutDump: on -timeout the go command sends SIGQUIT to
// the -exec program, the nettrap of the test binary; it must pass it on so
// that the binary prints its goroutine dump. We send it as go would.
func TestRunGoTestTimeoutDump(t *testing.T) {
	r := startStuck(t, false)
	inner := parentOf(t, r.testPID)
	if exe, _ := os.Readlink("/proc/" + strconv.Itoa(inner) + "/exe"); filepath.Base(exe) != "nettrap" {
		t.Fatalf("the test binary's parent is %q, want the -exec nettrap", exe)
	}
	if err := syscall.Kill(inner, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t)
	out := r.stdout.String()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(out, "SIGQUIT") || !strings.Contains(out, "stuck.stuckHere") {
		t.Errorf("no goroutine dump of the test binary in the output:\n%s", out)
	}
	if !strings.Contains(r.stderr.String(), "nettrap: no outbound network attempt blocked") {
		t.Errorf("no summary after the dump:\n%s", r.stderr.String())
	}
}

// TestRunGoTestInterrupt: Ctrl-C (SIGINT to the foreground process group)
// stops the whole run, leaves no test binary behind, and still ends with
// the summary.
func TestRunGoTestInterrupt(t *testing.T) {
	for name, toGroup := range map[string]bool{"group": true, "nettrap only": false} {
		t.Run(name, func(t *testing.T) {
			r := startStuck(t, true)
			target := r.cmd.Process.Pid
			if toGroup {
				target = -target
			}
			if err := syscall.Kill(target, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			code := r.wait(t)
			if code == 0 || code == 125 {
				t.Errorf("exit %d after SIGINT, want the go command's failure status", code)
			}
			if running(r.testPID) {
				t.Errorf("test binary %d still running after nettrap exited", r.testPID)
			}
			if !strings.Contains(r.stderr.String(), "nettrap: no outbound network attempt blocked") {
				t.Errorf("no summary after the interrupt:\nstderr: %s", r.stderr.String())
			}
		})
	}
}
