package supervisor_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor"
)

// leaderRole: the re-exec'd test binary keeps its main goroutine on the
// thread-group leader (locked from init, as the runtime has it during
// init), empties that thread's capabilities, and says what a new caller
// pool thinks nettrap may do.
const leaderRole = "leader-capless"

func init() {
	if os.Getenv(roleEnv) == leaderRole {
		runtime.LockOSThread() // main stays on the leader: /proc/self is this thread
	}
}

func leaderCaplessRole() int {
	if unix.Gettid() != os.Getpid() {
		fmt.Println("main goroutine is not on the leader")
		return 1
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil { // this thread only
		fmt.Println("capset:", err)
		return 1
	}
	canSwitch, canChroot, err := supervisor.CallerPoolCaps()
	fmt.Printf("switch=%v chroot=%v err=%v\n", canSwitch, canChroot, err)
	return 0
}

// TestCallerPoolReadsAPlainThread: nettrap's own credentials are read on
// a plain thread, not off /proc/self, which shows the thread-group
// leader: that may be a thread that emptied its capabilities (the
// capability-free maker, a caller thread). Seen: a root nettrap that
// believed it lacked CAP_SYS_CHROOT, and gave up emulating unix calls of
// a command in its own mount namespace.
func TestCallerPoolReadsAPlainThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: nettrap switches credentials and chroots only as root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+leaderRole)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "switch=true chroot=true err=<nil>" {
		t.Errorf("with a capability-free leader thread the pool learned %q, want switch=true chroot=true err=<nil>", got)
	}
}

// skipUnderNettrap skips a test that cannot hold when this test binary is
// itself confined by nettrap (nettrap's own suite run under nettrap): the
// outer nettrap's listener decides first.
func skipUnderNettrap(t *testing.T, why string) {
	t.Helper()
	if underNettrap() {
		t.Skip("under nettrap: " + why)
	}
}

// skipUnderSealed skips a test whose calls a nettrap --sealed above
// denies (and whose denial would fail the test even if it skipped after).
func skipUnderSealed(t *testing.T, why string) {
	t.Helper()
	if underNettrap() && os.Getenv("NETTRAP_SEALED") == "1" {
		t.Skip("under nettrap --sealed: " + why)
	}
}

// underNettrap tells whether this test binary is confined by nettrap.
func underNettrap() bool {
	return os.Getenv("NETTRAP_HUB") != "" && procfs.SeccompFiltered()
}
