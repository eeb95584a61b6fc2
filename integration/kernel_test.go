package integration

import (
	"bufio"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// requireI386 skips when the kernel has no i386 ABI: INT $0x80 then faults
// before any syscall entry (and before seccomp), so there is nothing to
// guard. It is a property of the kernel, not of the sandbox, hence a skip
// even under CI; the reason is in the output.
//
// Under an outer nettrap (lab.VariantOuter) every i386 network call of
// the tree is denied by that nettrap, in whatever namespace it is made
// (32-bit calls are not decoded): the victim's calls, unguarded or not,
// fail the test that makes them there, so the i386 tests skip saying so.
func requireI386(t *testing.T) {
	t.Helper()
	// The victim's i386 ops exist only on amd64 (found in arm64's guest).
	if runtime.GOARCH != "amd64" {
		t.Skipf("the i386 ABI is amd64's; this is %s", runtime.GOARCH)
	}
	lab.SkipUnder(t, "an outer nettrap denies every i386 network call of the tree, in any namespace (it does not decode 32-bit calls)", lab.VariantOuter)
	r := runVictim(t, "i386-socket")
	if r.Signal == "SIGSEGV" && strings.Contains(r.Err, "IA32 emulation is off") {
		t.Skipf("kernel without the i386 ABI: %s", r.Err)
	}
	mustOK(t, r)
}

// TestI386OpsWorkUnguarded: the i386 entry points really connect when
// nothing guards them, so under nettrap a refusal is nettrap's doing.
func TestI386OpsWorkUnguarded(t *testing.T) {
	sandbox.Require(t)
	requireI386(t)
	for _, op := range []string{"i386-connect", "i386-connect-direct"} {
		t.Run(op, func(t *testing.T) {
			ln := listenOnce(t, "tcp", "127.0.0.1:0")
			mustOK(t, runVictim(t, op, ln.addr))
			if got := waitAccepted(t, ln.accepted); got != ln.addr {
				t.Errorf("accepted on %s, want %s", got, ln.addr)
			}
		})
	}
}

// TestGoroutineConnectUsesAnotherThread: the op is only worth having if the
// connect really comes from a thread other than the main one.
func TestGoroutineConnectUsesAnotherThread(t *testing.T) {
	sandbox.Require(t)
	ln := listenOnce(t, "tcp", "127.0.0.1:0")
	r := runVictim(t, "goroutine-connect", ln.addr)
	mustOK(t, r)
	tids := value[map[string]int](t, r)
	if tids["tid"] == 0 || tids["tid"] == tids["main_tid"] {
		t.Errorf("connect thread %d, main thread %d: want two different threads", tids["tid"], tids["main_tid"])
	}
	waitAccepted(t, ln.accepted)
}

// TestBlackholeKeepsConnectBlocked: a connect to sandbox.BlackholeAddr
// enters the kernel and stays there (the victim is killed afterwards).
func TestBlackholeKeepsConnectBlocked(t *testing.T) {
	sandbox.Require(t)
	if err := sandbox.BlackholeReady(); err != nil {
		t.Skipf("blackhole not available: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	addr := netip.AddrPortFrom(sandbox.BlackholeAddr, 80).String()
	cmd := exec.CommandContext(ctx, victimbuild.Victim(t), "block-in-connect", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || line != "victim: connecting\n" {
		t.Fatalf("victim stderr %q: %v", line, err)
	}
	if !waitInSyscall(ctx, cmd.Process.Pid, unix.SYS_CONNECT) {
		t.Fatalf("victim never blocked in connect(2) to %s", addr)
	}
}

// waitInSyscall waits until some thread of pid sits in syscall nr. It gives
// up when ctx ends or the process is gone.
func waitInSyscall(ctx context.Context, pid, nr int) bool {
	for ctx.Err() == nil {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return false
		}
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/syscall")
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.Itoa(nr) {
				return true
			}
		}
		harness.Pause(ctx)
	}
	return false
}
