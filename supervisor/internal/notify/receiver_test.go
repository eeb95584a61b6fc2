package notify

import (
	"os"
	"runtime"
	"strings"
	"testing"
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
