package supervisor_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor"
)

// undispatchedRole: this test binary re-exec'd as one that forgot
// personality.Init (TestMain skips it), which asks for the ptrace engine
// and prints what Start said.
const undispatchedRole = "undispatched"

func undispatchedMain() int {
	// Should the refusal be missing, the stub is this binary again, with
	// an environment that names no role: it dispatches and runs true,
	// and the test sees a start where it wants a refusal (no recursion).
	cmd := exec.Command("/bin/true")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, roleEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	allow := decision.QuickFunc(func(*decision.Call) decision.Answer { return decision.Allow() })
	s, err := supervisor.Start(cmd, supervisor.Options{Decider: allow, Engine: supervisor.EnginePtraceOnly})
	if err != nil {
		fmt.Printf("unsupported=%v start: %v\n", errors.Is(err, supervisor.ErrUnsupported), err)
		return 0
	}
	s.Wait()
	fmt.Println("started")
	return 0
}

// A binary that starts the ptrace engine without dispatching nettrap's
// personalities is refused it, with what to add: its stub would run the
// binary's own main (a test binary's tests) instead. The go test process
// starts nothing itself: a re-exec'd copy asks.
func TestPtraceRefusedWithoutDispatch(t *testing.T) {
	requireSeccomp(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+undispatchedRole)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	out := string(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.HasPrefix(out, "unsupported=true") {
		t.Skipf("no ptrace engine here: %s", out)
	}
	want := "start: the ptrace engine cannot start its stub: this binary does not dispatch nettrap's re-exec personalities (personality.Init in main or TestMain)\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("got %q, want a refusal ending %q", out, want)
	}
}
