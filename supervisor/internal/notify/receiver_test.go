package notify

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sigBlk is the calling thread's blocked-signal mask, as the kernel
// shows it.
func sigBlk(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Skipf("no /proc/thread-self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigBlk:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no SigBlk line in /proc/thread-self/status")
	return ""
}

// TestBlockSignals: a receiver's thread blocks every signal the kernel
// lets it block (all but SIGKILL and SIGSTOP), and gets its own mask back
// before it is unlocked.
func TestBlockSignals(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := sigBlk(t)
	blocked, restore := blockSignals()
	if !blocked {
		t.Fatal("blockSignals failed")
	}
	// 64 signals, less SIGKILL (9) and SIGSTOP (19): bits 8 and 18 clear.
	if got, want := sigBlk(t), "fffffffffffbfeff"; got != want {
		restore()
		t.Fatalf("blocked mask %s, want %s", got, want)
	}
	restore()
	if got := sigBlk(t); got != before {
		t.Fatalf("mask after restore %s, want %s as before", got, before)
	}
}

// TestRecvSpin: receivers block at once unless the benchmarks' switch
// asks for a spin.
func TestRecvSpin(t *testing.T) {
	t.Setenv(spinEnv, "")
	os.Unsetenv(spinEnv)
	if d := RecvSpin(); d != 0 {
		t.Errorf("spin %v by default, want none", d)
	}
	t.Setenv(spinEnv, "50")
	if d := RecvSpin(); d != 50*time.Microsecond {
		t.Errorf("spin %v with %s=50, want 50µs", d, spinEnv)
	}
	t.Setenv(spinEnv, "nonsense")
	if d := RecvSpin(); d != 0 {
		t.Errorf("spin %v with a bad %s, want none", d, spinEnv)
	}
}
