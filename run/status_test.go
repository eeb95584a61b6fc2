package run

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor"
)

// Under either engine a supervised command's status is its own, or
// 128+signal: the ptrace engine reaps the command itself, and
// cmd.ProcessState then stays nil. The filter goes on the command (and
// the ptrace engine's stub, this binary re-executed), never on this
// process.
func TestSessionStatus(t *testing.T) {
	deny := decision.DeciderFunc(func(*decision.Call) decision.Answer { return decision.Deny(unix.EPERM) })
	for _, mode := range []supervisor.EngineMode{supervisor.EngineNotifyOnly, supervisor.EnginePtraceOnly} {
		name := map[supervisor.EngineMode]string{supervisor.EngineNotifyOnly: "notify", supervisor.EnginePtraceOnly: "ptrace"}[mode]
		t.Run(name, func(t *testing.T) {
			if _, err := supervisor.ChooseEngine(mode); err != nil {
				if errors.Is(err, bpf.ErrListenerAbove) {
					// Only one listener per filter chain: under nettrap
					// (its own suite under nettrap) or WSL2's init.
					t.Skipf("a seccomp listener is installed above this test, and a chain has only one: %v", err)
				}
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true but the %s engine cannot confine here: %v", name, err)
				}
				t.Skipf("the %s engine cannot confine here: %v", name, err)
			}
			for script, want := range map[string]int{"exit 0": 0, "exit 3": 3, "kill -TERM $$": 128 + 15, "kill -KILL $$": 128 + 9} {
				cmd := exec.Command("/bin/sh", "-c", script)
				sess, err := supervisor.Start(cmd, supervisor.Options{Decider: deny, Engine: mode, Emulate: supervisor.EmulateOff})
				if err != nil {
					t.Fatalf("%s: %v", script, err)
				}
				if got := sessionStatus(sess, sess.Wait()); got != want {
					t.Errorf("%s under %s: status %d, want %d", script, name, got, want)
				}
			}
		})
	}
}
