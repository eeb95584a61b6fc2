package emulate

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// signalFor sees a signal pending for a process's main thread, sent to the
// process or to the thread. A stopped process keeps its signals pending,
// as a thread waiting for an emulated call does.
func TestSignalFor(t *testing.T) {
	for _, directed := range []bool{false, true} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		pid := cmd.Process.Pid
		if _, ok := signalFor(pid); ok {
			t.Errorf("a signal pending for a sleeping process that was sent none")
		}
		unix.Kill(pid, unix.SIGSTOP)
		waitStopped(t, pid)
		if directed {
			unix.Tgkill(pid, pid, unix.SIGUSR1)
		} else {
			unix.Kill(pid, unix.SIGUSR1)
		}
		if tgid, ok := signalFor(pid); !ok || tgid != pid {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			t.Errorf("directed=%v: SIGUSR1 pending, not seen (tgid %d):\n%s", directed, tgid, st)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	if _, ok := signalFor(1 << 30); ok {
		t.Errorf("a signal pending for a thread that does not exist")
	}
}

func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil && strings.Contains(string(st), ") T ") {
			return
		}
	}
	t.Fatalf("pid %d never stopped", pid)
}

// TestInterruptedTimeout: what a resumed blocking connect would answer on
// a timeout is read before the connect (EINPROGRESS: the socket was not
// connecting yet, and SO_SNDTIMEO is set), except on a thread that blocks
// every signal, where the connect is never resumed.
func TestInterruptedTimeout(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{Sec: 5}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		unsignaled bool
		want       unix.Errno
	}{{false, unix.EINPROGRESS}, {true, unix.EALREADY}} {
		c := &Call{}
		c.Unsignaled = tc.unsignaled
		s := &Borrowed{FD: fd, call: c}
		if got := s.interruptedTimeout(); got != tc.want {
			t.Errorf("unsignaled %v: %v, want %v", tc.unsignaled, got, tc.want)
		}
	}
}
