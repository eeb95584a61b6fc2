package main

import (
	"strings"
	"testing"

	"github.com/nettrap/nettrap/supervisor"
)

// nettrap version names every kernel feature nettrap uses or works
// around, present or absent, and what nettrap does without it; the test
// switches that imitate older kernels make it say absent, and why.
func TestVersionSaysKernelFeatures(t *testing.T) {
	names := []string{"WAIT_KILLABLE_RECV (", "SYNC_WAKE_UP (", "ADDFD with SEND (", "PIDFD_THREAD (", "LANDLOCK ("}
	lines := func() map[string]string {
		var b strings.Builder
		printVersion(&b, supervisor.EngineAuto, supervisor.UsernsAuto)
		got := map[string]string{}
		for _, l := range strings.Split(b.String(), "\n") {
			for _, n := range names {
				if strings.HasPrefix(l, n) {
					got[n] = l
				}
			}
		}
		for _, n := range names {
			l, ok := got[n]
			switch {
			case !ok:
				t.Errorf("nettrap version has no line for %s…):\n%s", n, b.String())
			case strings.Contains(l, "): no") && !strings.Contains(l, "): no (") && !strings.Contains(l, "): no:"):
				t.Errorf("%q: absent without saying what nettrap does then", l)
			case !strings.Contains(l, "): yes") && !strings.Contains(l, "): no"):
				t.Errorf("%q: neither present nor absent", l)
			}
		}
		return got
	}
	lines()
	t.Setenv("NETTRAP_TEST_NO_SYNC_WAKEUP", "1")
	t.Setenv("NETTRAP_TEST_NO_KILLABLE_RECV", "1")
	t.Setenv("NETTRAP_TEST_NO_LANDLOCK", "1")
	got := lines()
	for n, env := range map[string]string{"SYNC_WAKE_UP (": "NETTRAP_TEST_NO_SYNC_WAKEUP", "WAIT_KILLABLE_RECV (": "NETTRAP_TEST_NO_KILLABLE_RECV",
		"LANDLOCK (": "NETTRAP_TEST_NO_LANDLOCK"} {
		if l := got[n]; !strings.Contains(l, "): no (") || !strings.Contains(l, "withheld by "+env) {
			t.Errorf("with %s set: %q, want it absent, withheld by it", env, l)
		}
	}
}
