package emulate

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
)

// watchedPair is a borrowed socket (one end of a socketpair) of a call
// by a sleeping child, the other end, and the loop's stop pipe.
func watchedPair(t *testing.T) (s *Borrowed, peer int, child *exec.Cmd, stop int) {
	t.Helper()
	child = exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pidfd, err := unix.PidfdOpen(child.Process.Pid, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but pidfd_open: %v", err)
		}
		t.Skipf("pidfd_open: %v", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, fd := range []int{pidfd, fds[0], fds[1], pipe[0], pipe[1]} {
			unix.Close(fd)
		}
	})
	c := &Call{Call: decode.Call{Call: decision.Call{TID: child.Process.Pid}}}
	c.sock = Borrowed{FD: fds[0], pidfd: pidfd, call: c}
	return &c.sock, fds[1], child, pipe[0]
}

// readable waits up to d for fd to be readable (or hung up).
func readable(fd int, d time.Duration) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, _ := unix.Poll(p, int(d/time.Millisecond))
	return n > 0
}

// waitStarted waits up to 5 s for wt's watch to start.
func waitStarted(t *testing.T, w *watcher, wt *watch) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(watchAfter) {
		w.mu.Lock()
		started := wt.ended != nil
		w.mu.Unlock()
		if started {
			return
		}
	}
	t.Fatal("a call listed for 5 s was never watched")
}

// A call still listed after a tick or two is watched: its target's death
// shuts the socket down (the peer reads EOF), which is what wakes an
// emulated connect blocked for good. Before the death the socket is left
// alone.
func TestWatcherShutsDownOnTargetExit(t *testing.T) {
	var w watcher
	s, peer, child, stop := watchedPair(t)
	wt := w.begin(s, stop, false)
	waitStarted(t, &w, wt)
	if readable(peer, 0) {
		t.Fatal("the socket was shut down while its target lived")
	}
	child.Process.Kill()
	child.Wait()
	if !readable(peer, 5*time.Second) {
		t.Fatal("the target died, and its watched socket stayed open for 5 s")
	}
	w.end(wt) // returns once the watch has let go of the socket
}

// A call that ends, watched or not, leaves its socket open and the list
// empty.
func TestWatcherEndsQuietly(t *testing.T) {
	var w watcher
	s, peer, _, stop := watchedPair(t)
	w.end(w.begin(s, stop, false))
	wt := w.begin(s, stop, false)
	waitStarted(t, &w, wt)
	w.end(wt)
	if readable(peer, 10*time.Millisecond) {
		t.Fatal("a watch that ended with its call shut the socket down")
	}
	w.mu.Lock()
	n := w.calls.n
	w.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls still listed after they ended", n)
	}
}
