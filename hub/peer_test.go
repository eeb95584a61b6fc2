package hub

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/procfs"
)

// TestMain lets this binary play a process that talks to the hub
// (HUB_HELPER): it connects, then execs a shell script that keeps the
// socket as fd 9; or the probe of TestServedByAncestor.
func TestMain(m *testing.M) {
	if path := os.Getenv(ancestorProbeEnv); path != "" {
		os.Exit(ancestorProbe(path))
	}
	if mode := os.Getenv("HUB_HELPER"); mode != "" {
		if err := helper(mode, os.Getenv("HUB_PATH"), os.Getenv("HUB_SCRIPT")); err != nil {
			fmt.Fprintln(os.Stderr, "hub helper:", err)
		}
		os.Exit(2) // exec failed
	}
	os.Exit(m.Run())
}

// helper connects to the hub at path (registering first in mode
// "register"), starts HUB_CHILD_SCRIPT (if set) with the socket as its fd
// 3, then becomes `sh -c script` with the socket as fd 9.
func helper(mode, path, script string) error {
	var uc *net.UnixConn
	switch mode {
	case "register":
		cl, err := Dial(path, "example.com/p", "p.test", 0)
		if err != nil {
			return err
		}
		uc = cl.c.rw.(*net.UnixConn)
	case "connect":
		nc, err := net.Dial("unix", path)
		if err != nil {
			return err
		}
		uc = nc.(*net.UnixConn)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	f, err := uc.File()
	if err != nil {
		return err
	}
	if cs := os.Getenv("HUB_CHILD_SCRIPT"); cs != "" {
		child := exec.Command("sh", "-c", cs)
		child.ExtraFiles = []*os.File{f}
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			return err
		}
	}
	// fd 9 without close-on-exec: the socket outlives the exec.
	if err := unix.Dup3(int(f.Fd()), 9, 0); err != nil {
		return os.NewSyscallError("dup3", err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	return syscall.Exec(sh, []string{"sh", "-c", script}, os.Environ())
}

// waitBuf is a Messages writer one can wait on.
type waitBuf struct {
	mu   sync.Mutex
	cond *sync.Cond
	b    strings.Builder
	late bool // wait gave up
}

func newWaitBuf() *waitBuf {
	w := &waitBuf{}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *waitBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	w.cond.Broadcast()
	return len(p), nil
}

// wait returns the messages once they hold s, or after a minute (the
// caller's check then fails), never hanging the test.
func (w *waitBuf) wait(s string) string {
	timer := time.AfterFunc(time.Minute, func() {
		w.mu.Lock()
		w.late = true
		w.mu.Unlock()
		w.cond.Broadcast()
	})
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !strings.Contains(w.b.String(), s) && !w.late {
		w.cond.Wait()
	}
	return w.b.String()
}

// listenAs starts a hub for which exe is the nettrap executable, and
// timeout bounds each wait.
func listenAs(t *testing.T, exe string, timeout time.Duration) (*Server, *waitBuf) {
	t.Helper()
	msgs := newWaitBuf()
	s, err := listen(func(s *Server) {
		s.exe, s.Timeout, s.Messages = exe, timeout, msgs
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, msgs
}

// startHelper runs this binary as a helper; it stays until the test ends
// (the script's `read` waits for stdin to close).
func startHelper(t *testing.T, s *Server, mode, script, childScript string) *exec.Cmd {
	t.Helper()
	if os.Getenv("NETTRAP_HUB") != "" && Confined() {
		// Then the helper's connect is made by that nettrap (its unix
		// connects are: docs/checks.md, "Allowed calls without the race"), and
		// the hub knows the helper by its first write, not by its
		// connect, which these tests are about. The integration test
		// TestForgedInnerRefused covers the first writer.
		t.Skip("under nettrap: the nettrap confining this test makes the helper's connect, so the kernel names that nettrap as the peer")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HUB_HELPER="+mode, "HUB_PATH="+s.Path, "HUB_SCRIPT="+script, "HUB_CHILD_SCRIPT="+childScript)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return cmd
}

func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	return sh
}

func registered(s *Server, pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inners[pid] != nil
}

// wantRefused waits for the refusal of pid's registration, checks that
// no inner was registered, and returns the messages.
func wantRefused(t *testing.T, s *Server, msgs *waitBuf, pid int) string {
	t.Helper()
	want := fmt.Sprintf("refused the registration of pid %d", pid)
	out := msgs.wait(want)
	if !strings.Contains(out, want) {
		t.Fatalf("no %q within a minute; messages:\n%s", want, out)
	}
	if s.Registered() != 0 {
		t.Errorf("registered %d, want 0", s.Registered())
	}
	return out
}

// A process that does not run nettrap cannot register.
func TestRegisterRefusedNotNettrap(t *testing.T) {
	s, msgs := listenAs(t, shell(t), 0) // nettrap is sh here; this test binary is not
	_, err := Dial(s.Path, "example.com/p", "p.test", 0)
	if err == nil || !strings.Contains(err.Error(), "is not running nettrap") {
		t.Fatalf("Dial = %v, want a refusal: not running nettrap", err)
	}
	wantRefused(t, s, msgs, os.Getpid())
}

// The reproduction: a process connects, hands the socket to a
// child and execs nettrap; the child speaks. Every byte must come from the
// process that connected, so the child's register is refused at once.
func TestRegisterRefusedFromAnotherHolder(t *testing.T) {
	s, msgs := listenAs(t, shell(t), 0)
	child := `printf '{"op":"register","package":"example.com/p","argv0":"p.test"}\n' >&3`
	helper := startHelper(t, s, "connect", "read x", child)
	out := wantRefused(t, s, msgs, helper.Process.Pid)
	if !strings.Contains(out, "written by another process than the one that connected") {
		t.Errorf("messages %q: want the foreign writer named", out)
	}
}

// A process that connected and then exec'd nettrap has a pid that runs
// nettrap, but the nettrap it became never reads that socket: whoever
// answers the challenge, it is not the process that connected.
func TestRegisterRefusedAfterExec(t *testing.T) {
	s, msgs := listenAs(t, shell(t), 0)
	// The helper becomes "nettrap" (sh), which sends register; its child
	// answers the challenge.
	answer := `IFS= read -r line <&3; n=${line#*'"nonce":"'}; n=${n%%'"'*}; printf '{"op":"confirm","nonce":"%s"}\n' "$n" >&3`
	helper := startHelper(t, s, "connect", `printf '{"op":"register","package":"example.com/p","argv0":"p.test"}\n' >&9; read x`, answer)
	out := wantRefused(t, s, msgs, helper.Process.Pid)
	if !strings.Contains(out, "written by another process") {
		t.Errorf("messages %q: want the challenge's answer refused as written by another process", out)
	}
}

// With no one else to answer, the challenge goes unanswered: refused when
// the wait for the answer ends.
func TestRegisterRefusedUnansweredChallenge(t *testing.T) {
	s, msgs := listenAs(t, shell(t), 100*time.Millisecond) // the refusal comes at the end of the wait
	helper := startHelper(t, s, "connect", `printf '{"op":"register","package":"example.com/p","argv0":"p.test"}\n' >&9; read x`, "")
	wantRefused(t, s, msgs, helper.Process.Pid)
}

// Checked per message: a registered inner that execs something else is
// dropped at its next message.
func TestInnerDroppedAfterExec(t *testing.T) {
	s, msgs := listenAs(t, "/proc/self/exe", 0)
	helper := startHelper(t, s, "register", `printf '{"op":"begin","id":1,"who":{"Package":"p","Test":"TestX","Marked":true}}\n' >&9; read x`, "")
	out := msgs.wait(fmt.Sprintf("pid %d is not running nettrap", helper.Process.Pid))
	if s.Registered() != 1 {
		t.Errorf("registered %d, want 1 (it registered while it ran nettrap):\n%s", s.Registered(), out)
	}
	s.Close() // waits for the inner's connection to be done with
	if registered(s, helper.Process.Pid) {
		t.Error("the inner is still registered after it exec'd")
	}
}

// Checked per message: bytes that another holder of a registered inner's
// socket writes (a forged "marked" answer) drop the inner.
func TestForgedAnswerDropsInner(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestX"})
	fa.block = make(chan struct{}) // the genuine inner does not answer
	s, msgs := listenAs(t, "/proc/self/exe", 0)
	self := os.Getpid()
	s.parent = func(pid int) int { // only who below reads it
		if pid == child {
			return self
		}
		return 0
	}
	cl, err := Dial(s.Path, "example.com/p", "p.test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	defer close(fa.block) // before Close, which waits for Serve
	cl.Serve(fa)
	f, err := cl.c.rw.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	forger := exec.Command(shell(t), "-c", `printf '{"op":"begin","id":1,"who":{"Package":"example.com/p","Test":"TestX","Marked":true}}\n' >&3`)
	forger.ExtraFiles = []*os.File{f}
	if out, err := forger.CombinedOutput(); err != nil {
		t.Fatalf("forger: %v %s", err, out)
	}
	tx := s.begin(child)
	w := tx.Who()
	tx.End()
	if w.Marked {
		t.Errorf("who = %+v: the forged answer was taken", w)
	}
	out := msgs.wait("written by another process than the one that connected")
	if !strings.Contains(out, fmt.Sprintf("bytes from pid %d", forger.Process.Pid)) {
		t.Errorf("messages %q: want the forger's pid", out)
	}
}

// Under --sealed an inner can name a test but never allow: its "marked"
// answer reaches a sealed policy, which denies and says the marker was
// ignored; the same answer allows without --sealed.
func TestSealedInnerMarkedIsDenied(t *testing.T) {
	for _, sealed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestLive", Context: policy.Context{Marked: true}})
			s, _, _ := newPair(t, fa)
			// A process under the inner (this process) makes the call.
			sleep := exec.Command("sleep", "60")
			if err := sleep.Start(); err != nil {
				t.Skip("no sleep:", err)
			}
			defer func() { sleep.Process.Kill(); sleep.Wait() }()
			g := &guard.Guard{Policy: &policy.Policy{Sealed: sealed}, Resolvers: &classify.Resolvers{},
				Messages: newWaitBuf(), Attribution: s}
			d := classify.Dest{Family: unix.AF_INET, Addr: netip.MustParseAddrPort("203.0.113.7:443")}
			pid := sleep.Process.Pid
			a := g.Decide(&decision.Call{TID: pid, Syscall: bpf.Call{Name: "connect", Kind: bpf.Connect, ABI: "x86_64"},
				Dests: []classify.Dest{d}, Task: decision.FixedTask{Process: decision.Caller{PID: pid, TID: pid, Argv0: "sleep"}}})
			if a.Allowed() == sealed {
				t.Fatalf("answer %+v under sealed=%v", a, sealed)
			}
			if !sealed {
				return
			}
			if a.Errno() != unix.EPERM {
				t.Errorf("errno %v, want EPERM", a.Errno())
			}
			if len(fa.recs) != 1 || fa.recs[0].Decision != audit.Denied || fa.recs[0].Test != "TestLive" {
				t.Fatalf("the inner got %+v, want one denial under TestLive", fa.recs)
			}
			if ev := fa.events(); !strings.Contains(ev, "during TestLive: "+audit.ReasonMarkerIgnored) {
				t.Errorf("the inner's report %q does not say the marker was ignored", ev)
			}
		})
	}
}

// An inner's last message may be read after it exited: once registered, a
// peer that is a zombie or gone passes the check; before registration it
// does not, nor does a live process that does not run nettrap.
func TestCheckExitedPeer(t *testing.T) {
	s, _ := listenAs(t, "/proc/self/exe", 0)
	cmd := exec.Command(shell(t), "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := procfs.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	p := peer{pid: pid, start: start}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(os.NewSyscallError("waitid", err))
	}
	if !procfs.Exited(pid) {
		t.Fatal("procfs.Exited = false for a zombie")
	}
	if err := s.check(p, true); err != nil {
		t.Errorf("zombie, registered: %v", err)
	}
	if err := s.check(p, false); err == nil {
		t.Error("zombie, registering: passed")
	}
	cmd.Wait()
	if err := s.check(p, true); err != nil {
		t.Errorf("gone, registered: %v", err)
	}
	live := exec.Command(shell(t), "-c", "read x")
	stdin, err := live.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); live.Wait() }()
	lstart, err := procfs.StartTime(live.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if procfs.Exited(live.Process.Pid) {
		t.Error("procfs.Exited = true for a live process")
	}
	if err := s.check(peer{pid: live.Process.Pid, start: lstart}, true); err == nil {
		t.Error("a live sh passed as a registered nettrap")
	}
	self, err := procfs.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.check(peer{pid: os.Getpid(), start: self + 1}, true); err == nil {
		t.Error("a reused pid (other start time) passed")
	}
}
