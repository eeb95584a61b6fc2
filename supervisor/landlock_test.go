package supervisor_test

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/landlock"
)

// reachParent is the victim op: what it can do to the process that
// confines it, "kill=RESULT mem=RESULT" (ok or the errno).
func reachParent() string {
	ppid := os.Getppid()
	mem := "ok"
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/mem", ppid), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	} else {
		mem = errnoName(err)
	}
	kill := "ok"
	if err := unix.Kill(ppid, 0); err != nil {
		kill = errnoName(err)
	}
	return "kill=" + kill + " mem=" + mem
}

// TestTreeDomain: under either engine the command starts in the Landlock
// domain the plan names, and cannot reach the supervisor that confines
// it: not its memory (as root without a user namespace of its own, whose
// CAP_SYS_PTRACE passes nettrap's non-dumpability), nor, where the domain
// scopes signals, with kill. Without a domain (NETTRAP_TEST_NO_LANDLOCK)
// both succeed where the kernel's other checks let them, so the refusals
// are the domain's.
func TestTreeDomain(t *testing.T) {
	requireSeccomp(t)
	root := os.Geteuid() == 0
	for _, userns := range []string{"auto", "off"} {
		for _, sealed := range []bool{false, true} {
			env := []string{usernsEnv + "=" + userns}
			if sealed {
				env = append(env, sealedEnv+"=1")
			}
			plan := landlock.Choose(sealed)
			// Without a domain: kill as the same user passes; the memory
			// of a non-dumpable nettrap only with CAP_SYS_PTRACE over its
			// user namespace (root sharing it).
			wantKill, wantMem := "kill=ok", "mem=EACCES"
			if root && userns == "off" {
				wantMem = "mem=ok"
			}
			bare, _ := confinedWith(t, append(env, landlock.NoLandlockEnv+"=1"), "reach-parent")
			if len(bare) != 2 || bare[0] != wantKill || bare[1] != wantMem {
				t.Fatalf("userns=%s sealed=%v without a domain: %q, want [%s %s]", userns, sealed, bare, wantKill, wantMem)
			}
			if plan.Kind != landlock.None {
				wantMem = "mem=EACCES"
			}
			if plan.Kind == landlock.Signals {
				wantKill = "kill=EPERM"
			}
			in, _ := confinedWith(t, env, "reach-parent")
			if len(in) != 2 || in[0] != wantKill || in[1] != wantMem {
				t.Errorf("userns=%s sealed=%v, %v: %q, want [%s %s]", userns, sealed, plan, in, wantKill, wantMem)
			}
		}
	}
}
