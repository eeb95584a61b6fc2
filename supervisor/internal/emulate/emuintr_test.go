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
