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
func engineRun(t *testing.T, u user, env []string, argv ...string) nettrapRun {
	t.Helper()
	if u == asNobody {
		lab.RequireRoot(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = filepath.Dir(argv[0]), env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if u == asNobody {
		lab.AsNobody(cmd)
	}
	code := exitCode(cmd.Run())
	if code < 0 {
		t.Fatalf("%q did not exit normally\nstdout: %s\nstderr: %s", argv, stdout.String(), stderr.String())
	}
	return nettrapRun{stdout.String(), stderr.String(), code}
}

// underParent is argv under parentlisten trapping traps, counting into
// count when it is not empty.
func underParent(b lab.Bins, traps, count string, argv ...string) []string {
	pl := []string{b.ParentListen, "--trap", traps}
	if count != "" {
		pl = append(pl, "--count", count)
	}
	return append(append(pl, "--"), argv...)
}

// noticeCount is how many times nettrap announced the ptrace fallback.
func noticeCount(stderr string) int {
	return len(linesWithPrefix(stderr, lab.ParentNotice))
}

// countFile is a file parentlisten can write as u, and its reader.
func countFile(t *testing.T) (path string, read func() int) {
	t.Helper()
	path = filepath.Join(openTempDir(t, "nettrap-count-", 0o777), "count")
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
	forUsers(t, []user{asSelf, asNobody}, func(t *testing.T, u user) {
		t.Run("version", func(t *testing.T) {
			r := engineRun(t, u, env, underParent(b, "bind,listen", "", b.Plain, "version")...)
			line := linesWithPrefix(r.stdout, "engine: ")
			if r.code != 0 || len(line) != 1 || !strings.HasPrefix(line[0], "engine: ptrace") || !strings.Contains(line[0], listenerReason) {
				t.Errorf("nettrap version under a listener: exit %d, engine lines %q, want one naming ptrace and %q\nstdout: %s\nstderr: %s",
					r.code, line, listenerReason, r.stdout, r.stderr)
			}
		})
		t.Run("notify-refused", func(t *testing.T) {
			r := engineRun(t, u, env, underParent(b, "bind,listen", "", b.Plain, "--engine=notify", "--", b.Victim, "listen-dial", "127.0.0.1:0")...)
			if r.code != 125 || !strings.Contains(r.stderr, listenerReason) || r.stdout != "" {
				t.Errorf("--engine=notify under a listener: exit %d, stdout %q, want 125, the command not run, and %q\nstderr: %s", r.code, r.stdout, listenerReason, r.stderr)
			}
		})
		for _, traps := range parentTraps {
			t.Run("trap="+traps, func(t *testing.T) {
				ownListener(t) // parentlisten's count of its own trap
				mark := h.Mark()
				r := engineRun(t, u, env, underParent(b, traps, "", b.Victim, "tcp-connect", engineDest)...)
				mustOK(t, parseVictim(t, []byte(r.stdout), r.stderr))
				if _, ok := h.WaitFor(mark, fakehost.To("tcp", engineEP.Addr), runTimeout); !ok {
					t.Fatalf("unguarded under parentlisten, the connect never arrived:\n%s", h.Dump())
				}
				var counts []int
				checkEngineConfines(t, h, b, func(argv ...string) nettrapRun {
					t.Helper()
					count, read := countFile(t)
					r := engineRun(t, u, env, underParent(b, traps, count, argv...)...)
					if n := noticeCount(r.stderr); n != 1 {
						t.Errorf("%d fallback notices, want 1:\n%s", n, r.stderr)
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

// TestEngineNoticeOnceForGoTest: `nettrap -- go test` on two packages
// under a listener above starts a nettrap per test binary, and the run
// says once that it falls back; TestLeak still fails with its line.
func TestEngineNoticeOnceForGoTest(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	argv := underParent(b, "bind,listen", "", b.Plain, "--", "go", "test", "-count=1", "./clean/", "./leaky/")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = runFixtureDir(t), runModEnv() // no NETTRAP_ variables
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	out := stdout.String() + stderr.String()
	if n := noticeCount(out); n != 1 || code != 1 {
		t.Errorf("exit %d, %d fallback notices; want 1 (TestLeak failed) and 1\n%s", code, n, out)
	}
	if !strings.Contains(stdout.String(), "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
		t.Errorf("no denial line under TestLeak:\n%s", out)
	}
}

// TestEngineForcedPtrace: the ptrace engine asked for on a machine where
// notification works, by flag and by environment, confines the same way.
func TestEngineForcedPtrace(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	h := fakehost.Start(t, engineEP)
	forUsers(t, []user{asSelf, asNobody}, func(t *testing.T, u user) {
		t.Run("version", func(t *testing.T) {
			r := engineRun(t, u, engineEnv("NETTRAP_ENGINE=ptrace"), b.Plain, "version")
			line := linesWithPrefix(r.stdout, "engine: ")
			if r.code != 0 || len(line) != 1 || !strings.HasPrefix(line[0], "engine: ptrace") {
				t.Errorf("NETTRAP_ENGINE=ptrace nettrap version: exit %d, engine lines %q, want one naming ptrace\nstdout: %s", r.code, line, r.stdout)
			}
		})
		t.Run("flag", func(t *testing.T) {
			checkEngineConfines(t, h, b, func(argv ...string) nettrapRun {
				t.Helper()
				r := engineRun(t, u, engineEnv(), append([]string{argv[0], "--engine=ptrace"}, argv[1:]...)...)
				if n := noticeCount(r.stderr); n != 0 {
					t.Errorf("a fallback notice where ptrace was asked for:\n%s", r.stderr)
				}
				return r
			})
		})
		t.Run("env", func(t *testing.T) {
			checkEngineConfines(t, h, b, func(argv ...string) nettrapRun {
				t.Helper()
				return engineRun(t, u, engineEnv("NETTRAP_ENGINE=ptrace"), argv...)
			})
		})
	})
}

// checkEngineConfines runs, with run (which adds the engine's setting),
// nettrap on the victim: a connect to the fake host is denied and nothing
// arrives; a listen and a loopback connect work.
func checkEngineConfines(t *testing.T, h *fakehost.Host, b lab.Bins, run func(argv ...string) nettrapRun) {
	t.Helper()
	mark := h.Mark()
	r := run(b.Plain, "--", b.Victim, "tcp-connect", engineDest)
	v := parseVictim(t, []byte(r.stdout), r.stderr)
	if r.code != 1 || v.OK || v.Errno != "EPERM" || len(blockedLines(r.stderr)) != 1 {
		t.Errorf("denied connect: exit %d, ok=%v errno=%q, %d blocked lines; want 1, EPERM, 1\nstderr: %s",
			r.code, v.OK, v.Errno, len(blockedLines(r.stderr)), r.stderr)
	}
	assertNothingArrived(t, h, mark, engineEP)

	r = run(b.Plain, "--", b.Victim, "listen-dial", "127.0.0.1:0")
	if v := parseVictim(t, []byte(r.stdout), r.stderr); r.code != 0 || !v.OK {
		t.Errorf("loopback listen and connect: exit %d, ok=%v errno=%q err=%q\nstderr: %s", r.code, v.OK, v.Errno, v.Err, r.stderr)
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
			return underParent(b, "connect,sendto,sendmsg", "", append([]string{b.Plain, "--"}, victim...)...)
		}},
	}
	forUsers(t, []user{asSelf, asNobody}, func(t *testing.T, u user) {
		if u == asNobody {
			lab.RequireRoot(t)
		}
		loop := []string{b.Victim, "connect-loop", engineDest}
		t.Run("unguarded", func(t *testing.T) {
			mark := h.Mark()
			l := startLoop(t, u, loop)
			if _, ok := h.WaitFor(mark, fakehost.To("tcp", engineEP.Addr), runTimeout); !ok {
				t.Errorf("unguarded, the loop's connects never arrived:\n%s", h.Dump())
			}
			l.cmd.Process.Kill()
			l.finish(t)
		})
		for _, s := range setups {
			t.Run(s.name, func(t *testing.T) {
				if s.name == "parent" {
					ownListener(t)
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
				assertNothingArrived(t, h, mark, engineEP)
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

func startLoop(t *testing.T, u user, argv []string) *loopRun {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = filepath.Dir(argv[0]), engineEnv()
	if u == asNobody {
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
	deadline := time.After(runTimeout)
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
	deadline := time.After(runTimeout)
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
			t.Fatalf("the victim still ran %v after nettrap was killed (%d lines since)", runTimeout, len(rest))
		}
	}
}
