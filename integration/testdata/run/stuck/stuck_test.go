package stuck

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestStuck never ends on its own: go test -timeout must still get its
// goroutine dump, and Ctrl-C must stop it. It writes its pid first, so
// that the test can check that no process was left behind.
func TestStuck(t *testing.T) {
	if p := os.Getenv("NTRUNFIX_PIDFILE"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Skip("fixture of nettrap's integration tests")
	}
	stuckHere()
}

//go:noinline
func stuckHere() {
	for {
		time.Sleep(time.Hour)
	}
}
