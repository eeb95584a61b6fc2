package integration

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// The engines (docs/engines.md#engines), each asked for explicitly: these tests start the
// plain nettrap binary themselves, whatever NETTRAP_TEST_ENGINE says.
//
// parentlisten (internal/lab/csrc/parentlisten.c) plays WSL2's init: a
// seccomp listener above nettrap, trapping bind and listen and answering
// CONTINUE, so nettrap's own listener is refused (EBUSY). Trapping
// connect, sendto and sendmsg instead, its USER_NOTIF outranks nettrap's
// TRACE on the very calls nettrap decides: they must be denied all the
// same.

// The documentation address the denied connects aim at, served by a fake
// host in the sandbox's private network namespace.
const engineDest = "203.0.113.7:443"

var (
	engineEP = fakehost.TCP(engineDest)
	// listenerReason is what nettrap says of a listener above it.
	listenerReason = "a seccomp listener is already installed above nettrap"
)

// parentTraps are parentlisten's two trap sets: WSL2's, and the calls
// nettrap decides.
var parentTraps = []string{"bind,listen", "connect,sendto,sendmsg"}

// engineEnv is the test's environment without any NETTRAP_ variable, plus
// extra.
func engineEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NETTRAP_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// engineRun runs argv as u with env and waits for it.
func engineRun(t *testing.T, u harness.User, env []string, argv ...string) harness.Run {
	t.Helper()
	if u == harness.AsNobody {
		lab.RequireRoot(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = filepath.Dir(argv[0]), env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if u == harness.AsNobody {
		lab.AsNobody(cmd)
	}
	code := harness.ExitCode(cmd.Run())
	if code < 0 {
		t.Fatalf("%q did not exit normally\nstdout: %s\nstderr: %s", argv, stdout.String(), stderr.String())
	}
	return harness.Run{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// countFile is a file parentlisten can write as u, and its reader.
func countFile(t *testing.T) (path string, read func() int) {
	t.Helper()
	path = filepath.Join(harness.OpenTempDir(t, "nettrap-count-", 0o777), "count")
	return path, func() int {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("parentlisten's count: %v", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("parentlisten's count %q: %v", b, err)
		}
		return n
	}
}

// TestEngineUnderParentListener: under a listener above it, nettrap says
// so (version, one notice per run), refuses --engine=notify with the
// reason, and confines with the ptrace engine: the leak is denied and
// nothing arrives, the loopback exchange works, and parentlisten's count
// shows its own trap kept firing under nettrap.
func TestEngineUnderParentListener(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	h := fakehost.Start(t, engineEP)
	env := engineEnv()
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		t.Run("version", func(t *testing.T) {
			r := engineRun(t, u, env, lab.UnderParent(b, "bind,listen", "", b.Plain, "version")...)
			line := harness.LinesWithPrefix(r.Stdout, "engine: ")
			if r.Code != 0 || len(line) != 1 || !strings.HasPrefix(line[0], "engine: ptrace") || !strings.Contains(line[0], listenerReason) {
				t.Errorf("nettrap version under a listener: exit %d, engine lines %q, want one naming ptrace and %q\nstdout: %s\nstderr: %s",
					r.Code, line, listenerReason, r.Stdout, r.Stderr)
			}
		})
		t.Run("notify-refused", func(t *testing.T) {
			r := engineRun(t, u, env, lab.UnderParent(b, "bind,listen", "", b.Plain, "--engine=notify", "--", b.Victim, "listen-dial", "127.0.0.1:0")...)
			if r.Code != 125 || !strings.Contains(r.Stderr, listenerReason) || r.Stdout != "" {
				t.Errorf("--engine=notify under a listener: exit %d, stdout %q, want 125, the command not run, and %q\nstderr: %s", r.Code, r.Stdout, listenerReason, r.Stderr)
			}
		})
		for _, traps := range parentTraps {
			t.Run("trap="+traps, func(t *testing.T) {
				lab.OwnListener(t) // parentlisten's count of its own trap
				mark := h.Mark()
				r := engineRun(t, u, env, lab.UnderParent(b, traps, "", b.Victim, "tcp-connect", engineDest)...)
				mustOK(t, parseVictim(t, []byte(r.Stdout), r.Stderr))
				if _, ok := h.WaitFor(mark, fakehost.To("tcp", engineEP.Addr), harness.Timeout); !ok {
					t.Fatalf("unguarded under parentlisten, the connect never arrived:\n%s", h.Dump())
				}
				var counts []int
				checkEngineConfines(t, h, b, func(argv ...string) harness.Run {
					t.Helper()
					count, read := countFile(t)
					r := engineRun(t, u, env, lab.UnderParent(b, traps, count, argv...)...)
					if n := lab.NoticeCount(r.Stderr); n != 1 {
						t.Errorf("%d fallback notices, want 1:\n%s", n, r.Stderr)
					}
					counts = append(counts, read())
					return r
				})
				// The loopback exchange binds, listens and connects:
				// parentlisten's trap fired under nettrap. (A denied
				// connect never reaches seccomp: nettrap skips it at
				// its syscall-entry stop.)
				if len(counts) != 2 || counts[1] == 0 {
					t.Errorf("parentlisten --trap %s answered %v notifications (denied run, loopback run): its trap never fired under nettrap", traps, counts)
				}
			})
		}
	})
}

// TestEngineForcedPtrace: the ptrace engine asked for on a machine where
// notification works, by flag and by environment, confines the same way.
func TestEngineForcedPtrace(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	h := fakehost.Start(t, engineEP)
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		t.Run("version", func(t *testing.T) {
			r := engineRun(t, u, engineEnv("NETTRAP_ENGINE=ptrace"), b.Plain, "version")
			line := harness.LinesWithPrefix(r.Stdout, "engine: ")
			if r.Code != 0 || len(line) != 1 || !strings.HasPrefix(line[0], "engine: ptrace") {
				t.Errorf("NETTRAP_ENGINE=ptrace nettrap version: exit %d, engine lines %q, want one naming ptrace\nstdout: %s", r.Code, line, r.Stdout)
			}
		})
		t.Run("flag", func(t *testing.T) {
			checkEngineConfines(t, h, b, func(argv ...string) harness.Run {
				t.Helper()
				r := engineRun(t, u, engineEnv(), append([]string{argv[0], "--engine=ptrace"}, argv[1:]...)...)
				if n := lab.NoticeCount(r.Stderr); n != 0 {
					t.Errorf("a fallback notice where ptrace was asked for:\n%s", r.Stderr)
				}
				return r
			})
		})
		t.Run("env", func(t *testing.T) {
			checkEngineConfines(t, h, b, func(argv ...string) harness.Run {
				t.Helper()
				return engineRun(t, u, engineEnv("NETTRAP_ENGINE=ptrace"), argv...)
			})
		})
	})
}

// checkEngineConfines runs, with run (which adds the engine's setting),
// nettrap on the victim: a connect to the fake host is denied and nothing
// arrives; a listen and a loopback connect work.
func checkEngineConfines(t *testing.T, h *fakehost.Host, b lab.Bins, run func(argv ...string) harness.Run) {
	t.Helper()
	mark := h.Mark()
	r := run(b.Plain, "--", b.Victim, "tcp-connect", engineDest)
	v := parseVictim(t, []byte(r.Stdout), r.Stderr)
	if r.Code != 1 || v.OK || v.Errno != "EPERM" || len(harness.BlockedLines(r.Stderr)) != 1 {
		t.Errorf("denied connect: exit %d, ok=%v errno=%q, %d blocked lines; want 1, EPERM, 1\nstderr: %s",
			r.Code, v.OK, v.Errno, len(harness.BlockedLines(r.Stderr)), r.Stderr)
	}
	harness.AssertNothingArrived(t, h, mark, engineEP)

	r = run(b.Plain, "--", b.Victim, "listen-dial", "127.0.0.1:0")
	if v := parseVictim(t, []byte(r.Stdout), r.Stderr); r.Code != 0 || !v.OK {
		t.Errorf("loopback listen and connect: exit %d, ok=%v errno=%q err=%q\nstderr: %s", r.Code, v.OK, v.Errno, v.Err, r.Stderr)
	}
}

// blockedPid reads the pid of the first denied caller in nettrap's lines.
var blockedPid = regexp.MustCompile(`Outbound network blocked: .* by pid (\d+) `)

// TestEngineTracerKilled: a victim loops connecting to the fake host.
// Unguarded its connects arrive; under the ptrace engine they are denied,
// and when nettrap is killed (SIGKILL, nothing to clean up) the victim
// dies with it or keeps failing: nothing arrives after the kill either.
func TestEngineTracerKilled(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	h := fakehost.Start(t, engineEP)
	setups := []struct {
		name string
		argv func(victim ...string) []string
	}{
		{"ptrace", func(victim ...string) []string {
			return append([]string{b.Plain, "--engine=ptrace", "--"}, victim...)
		}},
		{"parent", func(victim ...string) []string {
			return lab.UnderParent(b, "connect,sendto,sendmsg", "", append([]string{b.Plain, "--"}, victim...)...)
		}},
	}
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		if u == harness.AsNobody {
			lab.RequireRoot(t)
		}
		loop := []string{b.Victim, "connect-loop", engineDest}
		t.Run("unguarded", func(t *testing.T) {
			mark := h.Mark()
			l := startLoop(t, u, loop)
			if _, ok := h.WaitFor(mark, fakehost.To("tcp", engineEP.Addr), harness.Timeout); !ok {
				t.Errorf("unguarded, the loop's connects never arrived:\n%s", h.Dump())
			}
			l.cmd.Process.Kill()
			l.finish(t)
		})
		for _, s := range setups {
			t.Run(s.name, func(t *testing.T) {
				if s.name == "parent" {
					lab.OwnListener(t)
				}
				mark := h.Mark()
				l := startLoop(t, u, s.argv(loop...))
				l.expect(t, "EPERM") // confined: its connects are denied
				// parentlisten execs nettrap: the pid is nettrap's.
				if err := l.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				after := l.finish(t)
				for _, line := range after {
					if line == "ok" {
						t.Errorf("a connect succeeded after nettrap was killed: %q", after)
						break
					}
				}
				t.Logf("after the kill the victim printed %d lines (%q), then was gone", len(after), after)
				harness.AssertNothingArrived(t, h, mark, engineEP)
			})
		}
	})
}

// loopRun is a running connect-loop, its stdout read line by line.
type loopRun struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *lockedBuffer
}

// lockedBuffer is a buffer the command's copier writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startLoop(t *testing.T, u harness.User, argv []string) *loopRun {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = filepath.Dir(argv[0]), engineEnv()
	if u == harness.AsNobody {
		lab.AsNobody(cmd)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &loopRun{cmd: cmd, lines: make(chan string, 1024), stderr: &lockedBuffer{}}
	cmd.Stderr = l.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { l.cmd.Process.Kill() })
	return l
}

// expect waits for a line equal to want.
func (l *loopRun) expect(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(harness.Timeout)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.cmd.Wait()
				t.Fatalf("the loop ended before printing %q\nstderr: %s", want, l.stderr.String())
			}
			if line == want {
				return
			}
		case <-deadline:
			t.Fatalf("the loop never printed %q\nstderr: %s", want, l.stderr.String())
		}
	}
}

// finish reads the loop's remaining lines until every process holding its
// stdout is gone, and reaps the command. A loop still printing when the
// time is up is killed (by the pid nettrap named) and fails t: the
// victim must not outlive nettrap for long.
func (l *loopRun) finish(t *testing.T) []string {
	t.Helper()
	var rest []string
	deadline := time.After(harness.Timeout)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.cmd.Wait()
				return rest
			}
			rest = append(rest, line)
		case <-deadline:
			if m := blockedPid.FindStringSubmatch(l.stderr.String()); m != nil {
				pid, _ := strconv.Atoi(m[1])
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the victim still ran %v after nettrap was killed (%d lines since)", harness.Timeout, len(rest))
		}
	}
}
