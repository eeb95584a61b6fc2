package supervisor_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/internal/personality"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/supervisor"
)

// The tests never install a filter in the go test process. They re-exec the
// test binary twice: once as a supervisor (role "supervisor"), which confines
// a third copy of itself as the victim (role "victim"). Everything they aim at
// is on loopback: the test decider denies 127.0.0.2 and stalls 127.0.0.3, and
// listeners there record whatever gets through.
const roleEnv = "NETTRAP_SUPERVISOR_TEST_ROLE"

// lateLoopEnv makes the supervisor role's loop goroutine start late.
const lateLoopEnv = "NETTRAP_SUPERVISOR_TEST_LATE_LOOP"

// asideEnv makes the supervisor role's decider one that cannot say which
// calls are quick: the ptrace engine then decides every call aside.
const asideEnv = "NETTRAP_SUPERVISOR_TEST_ASIDE"

// keepEnv makes the supervisor role's decider keep every call it is
// asked about, answering testDecider's answers as they are ("kept") or
// marked Unkept ("unkept"), and report what became of the calls kept.
const keepEnv = "NETTRAP_SUPERVISOR_TEST_KEEP_CALLS"

// keeper wraps a decider and keeps each call it sees, with the
// notification id it had then.
type keeper struct {
	next   decision.Decider
	unkept bool
	mu     sync.Mutex
	calls  []*decision.Call
	ids    []uint64
}

func (k *keeper) Decide(c *decision.Call) decision.Answer {
	k.mu.Lock()
	k.calls, k.ids = append(k.calls, c), append(k.ids, c.ID)
	k.mu.Unlock()
	a := k.next.Decide(c)
	if k.unkept {
		a = a.Unkept()
	}
	return a
}

func (k *keeper) Quick(*decision.Call) bool { return true }

// report says how many calls were decided, how many distinct Calls
// they came in, and how many kept Calls now hold another call.
func (k *keeper) report(r *roleReport) {
	k.mu.Lock()
	defer k.mu.Unlock()
	seen := map[*decision.Call]bool{}
	for i, c := range k.calls {
		seen[c] = true
		if c.ID != k.ids[i] {
			r.KeptReused++
		}
	}
	r.Decided, r.DistinctCalls = len(k.calls), len(seen)
}

// engineEnv chooses the supervisor role's engine (auto, notify, ptrace);
// set in the test's own environment it applies to every test.
const engineEnv = "NETTRAP_SUPERVISOR_TEST_ENGINE"

// usernsEnv chooses the supervisor role's --userns (auto, off).
const usernsEnv = "NETTRAP_SUPERVISOR_TEST_USERNS"

// noStackEnv makes the supervisor role's decider deny without reading
// the caller's stack (BenchmarkDeniedConnect weighs that read).
const noStackEnv = "NETTRAP_SUPERVISOR_TEST_NO_STACK"

// sealedEnv, set, starts the supervisor role's engine as --sealed does
// (Options.Sealed).
const sealedEnv = "NETTRAP_SUPERVISOR_TEST_SEALED"

// gcEnv, set, makes the supervisor role collect garbage every
// millisecond: a stop of the world must never wait for a receiver
// (TestStalledReadHoldsUpNoOther).
const gcEnv = "NETTRAP_SUPERVISOR_TEST_GC"

// emulateEnv chooses the supervisor role's emulation mode (auto, on, off).
const emulateEnv = "NETTRAP_SUPERVISOR_TEST_EMULATE"

func TestMain(m *testing.M) {
	// A binary that forgot the dispatch (TestPtraceRefusedWithoutDispatch)
	// must not pass through it.
	if os.Getenv(roleEnv) == undispatchedRole {
		os.Exit(undispatchedMain())
	}
	// The ptrace engine's stub and waker, which the supervisor role's
	// engine starts from this binary, before any role.
	personality.Init()
	switch os.Getenv(roleEnv) {
	case "supervisor":
		os.Exit(supervisorRole(os.Args[len(os.Args)-1], false))
	case "supervisor-keep":
		os.Exit(supervisorRole(os.Args[len(os.Args)-1], true))
	case "victim":
		os.Exit(victimRole(strings.Fields(os.Getenv("NETTRAP_VICTIM_OP"))))
	case leaderRole:
		os.Exit(leaderCaplessRole())
	}
	// Under -race every re-exec'd copy would sleep a second at exit
	// (ThreadSanitizer's atexit_sleep_ms); races are still reported.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

var (
	deniedNet     = netip.MustParsePrefix("127.0.0.2/32")
	stalledNet    = netip.MustParsePrefix("127.0.0.3/32")
	redirectedNet = netip.MustParsePrefix("127.0.0.4/32")
)

// standInEnv names, for the supervisor role, the loopback address that
// calls to redirectedNet are redirected to (denied when unset).
const standInEnv = "NETTRAP_SUPERVISOR_TEST_STANDIN"

// redirects are what Redirect.Done was told, for the report: "ok LOCAL"
// or "failed".
var (
	redirectsMu sync.Mutex
	redirects   []string
)

func redirectTo(standIn string) *decision.Redirect {
	rd := &decision.Redirect{Done: func(local netip.AddrPort, ok bool) {
		redirectsMu.Lock()
		defer redirectsMu.Unlock()
		if ok {
			redirects = append(redirects, "ok "+local.String())
		} else {
			redirects = append(redirects, "failed")
		}
	}}
	if ap, err := netip.ParseAddrPort(standIn); err == nil {
		rd.To4 = ap
	}
	return rd
}

// stallNotice (in the supervisor role) gets one byte each time the decider
// starts holding a call; the victim reads them on [stallNoticeFD]. That is
// the handshake kill-mid-call needs: its child is killed only once its call
// is known to be waiting for a decision.
var stallNotice *os.File

// stallNoticeFD is where the victim finds the read end of stallNotice.
const stallNoticeFD = 3

// testDecider denies 127.0.0.2, holds calls to 127.0.0.3 until the caller
// is gone, and allows the rest.
func testDecider(c *decision.Call) decision.Answer {
	for _, d := range c.Dests {
		switch {
		case deniedNet.Contains(d.Addr.Addr().Unmap()):
			noteCaller(c)
			return decision.Deny(unix.EPERM)
		case redirectedNet.Contains(d.Addr.Addr().Unmap()):
			return decision.DenyRedirect(unix.EPERM, redirectTo(os.Getenv(standInEnv)))
		case stalledNet.Contains(d.Addr.Addr().Unmap()):
			if stallNotice != nil {
				// A victim that is not waiting for it has the pipe
				// open and unread; an exited one makes this EPIPE.
				_, _ = stallNotice.Write([]byte{1})
			}
			deadline := time.Now().Add(20 * time.Second)
			for c.Task.Pending() && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			return decision.Deny(unix.EPERM)
		}
	}
	switch c.Syscall.Kind {
	case bpf.Ptrace, bpf.ProcessVMWritev, bpf.PidfdGetfd:
		// As the guard: the caller's own descendant (or itself) only.
		if c.OwnDescendant {
			return decision.Allow()
		}
		return decision.Deny(unix.EPERM)
	}
	if c.SourceRoute || c.Pin != "" {
		return decision.Deny(unix.EPERM)
	}
	for _, p := range deniedGroups {
		if c.Group.IsValid() && p.Contains(c.Group) {
			return decision.Deny(unix.EPERM)
		}
	}
	if c.Syscall.Kind == bpf.Socket && !c.Syscall.Foreign && c.Socket.Domain == unix.AF_NETLINK {
		if c.OtherNetns {
			return decision.Allow()
		}
		return decision.AllowCapless()
	}
	// Netlink sends to the kernel are all made without capabilities,
	// changes included: the kernel must refuse those itself.
	if c.NetlinkOurs {
		return decision.AllowCapless()
	}
	if c.Syscall.Foreign || c.Syscall.Kind == bpf.Socket || c.Syscall.Kind == bpf.IOUringSetup {
		return decision.Deny(unix.EPERM)
	}
	if peerCheckOn && len(c.Dests) > 0 {
		// As --sealed's guard: only a socket of the tree may take it.
		return decision.AllowPeers(&decision.PeerCheck{Outside: func(classify.Dest, decision.Peer) unix.Errno { return unix.ECONNREFUSED }})
	}
	return decision.Allow()
}

// peerCheckEnv makes the test decider answer every allowed call with a
// destination as --sealed's guard does (decision.AllowPeers).
const peerCheckEnv = "NETTRAP_SUPERVISOR_TEST_PEERS"

var peerCheckOn = os.Getenv(peerCheckEnv) != ""

// quickTestDecider is testDecider, quick but for the calls it holds: those
// wait for the victim to kill their caller.
type quickTestDecider struct{}

func (quickTestDecider) Decide(c *decision.Call) decision.Answer { return testDecider(c) }

func (quickTestDecider) Quick(c *decision.Call) bool {
	for _, d := range c.Dests {
		if stalledNet.Contains(d.Addr.Addr().Unmap()) {
			return false
		}
	}
	return true
}

type roleReport struct {
	Status        int
	Notifications uint64
	Allowed       uint64
	Denied        uint64
	Vanished      uint64
	Emulated      uint64
	Redirects     []string
	Capless       uint64
	Errors        []string
	Callers       []string
	Stacks        []string // where each denied call came from (decision.StackOf)
	KillableRecv  bool     // the filter took SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	SyncWakeUp    bool     // the listener took SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
	Engine        string
	Userns        supervisor.NsMethod
	// EntryStops, Hidden, Unprobed, Others: how the ptrace engine decides under a
	// listener above, and what its probe saw (EngineChoice).
	EntryStops bool
	Hidden     string
	Unprobed   []string
	Others     []string
	// Decided, DistinctCalls, KeptReused: what keepEnv's keeper saw.
	Decided, DistinctCalls, KeptReused int
}

// callers are what Task told of each denied call, for the report:
// "SOCKTYPE EXE ARGV0", and "pid" when the pid is that of the thread's
// process.
var (
	callersMu sync.Mutex
	callers   []string
	stacks    []string
)

func noteCaller(c *decision.Call) {
	who := c.Task.Caller()
	note := fmt.Sprintf("%s %s %s", c.Task.SockType(), who.Exe, who.Argv0)
	if who.PID > 0 && who.TID == c.TID && !who.Gone {
		note += " pid"
	}
	where := "no stack"
	if os.Getenv(noStackEnv) != "" {
		where = "not read"
	} else if st, tab := decision.StackOf(c.Task); st != nil {
		if w, ok := tab.Where(st); ok {
			where = w.String()
		}
	}
	callersMu.Lock()
	defer callersMu.Unlock()
	callers = append(callers, note)
	stacks = append(stacks, where)
}

// supervisorRole confines the victim and writes a report to reportPath.
// keep: the victim does not die with the supervisor (it gets a harmless
// SIGWINCH instead of SIGKILL), as a grandchild would not.
func supervisorRole(reportPath string, keep bool) int {
	// Hold the main thread here, so that Start's filter goroutine runs on
	// another one: Go never lets the main thread exit, which would hide a
	// filter thread exiting (and PR_SET_PDEATHSIG killing the victim) too
	// early.
	runtime.LockOSThread()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=victim")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	notices, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipe:", err)
		return 125
	}
	stallNotice = w
	cmd.ExtraFiles = []*os.File{notices} // stallNoticeFD
	if keep {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGWINCH}
	}
	if os.Getenv("NETTRAP_VICTIM_OP") == "stdout-socket" {
		cmd.Stdout = os.NewFile(3, "inherited socket")
	}
	mode, err := supervisor.ParseEmulateMode(os.Getenv(emulateEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	if os.Getenv(gcEnv) != "" {
		go func() {
			for range time.Tick(time.Millisecond) {
				runtime.GC()
			}
		}()
	}
	if os.Getenv(lateLoopEnv) != "" {
		supervisor.DelayLoop(300 * time.Millisecond)
	}
	if names := os.Getenv(parentListenerEnv); names != "" {
		if err := installParentListener(names); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 125
		}
	}
	engine, err := supervisor.ParseEngineMode(os.Getenv(engineEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	userns, err := supervisor.ParseUsernsMode(os.Getenv(usernsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	var decider decision.Decider = quickTestDecider{}
	if os.Getenv(asideEnv) != "" {
		decider = decision.DeciderFunc(testDecider) // not a decision.QuickDecider
	}
	var keeping *keeper
	if mode := os.Getenv(keepEnv); mode != "" {
		keeping = &keeper{next: decider, unkept: mode == "unkept"}
		decider = keeping
	}
	sealed := os.Getenv(sealedEnv) != ""
	s, err := supervisor.Start(cmd, supervisor.Options{Decider: decider, Emulate: mode, Engine: engine, Userns: userns,
		Sealed: sealed, Landlock: landlock.Choose(sealed)})
	notices.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 125
	}
	endStorm := startSignalStorm()
	s.Wait()
	endStorm()
	status := cmd.ProcessState.ExitCode()
	if ws, ok := s.WaitStatus(); ok {
		status = ws.ExitStatus()
	}
	r := roleReport{
		Status:        status,
		Notifications: s.Stats.Notifications.Load(),
		Allowed:       s.Stats.Allowed.Load(),
		Denied:        s.Stats.Denied.Load(),
		Vanished:      s.Stats.Vanished.Load(),
		Emulated:      s.Stats.Emulated.Load(),
		Redirects:     redirects,
		Callers:       callers,
		Stacks:        stacks,
		Capless:       s.Stats.CaplessNetlink.Load(),
		Engine:        s.Engine.Engine.String(),
		KillableRecv:  s.KillableRecv,
		SyncWakeUp:    s.SyncWakeUp,
		Userns:        s.Userns.Method,
		EntryStops:    s.Engine.EntryStops,
		Hidden:        s.Engine.Listener.Hidden,
		Unprobed:      s.Engine.Listener.Unprobed,
		Others:        s.Engine.Listener.Others,
	}
	for _, e := range s.Errors() {
		r.Errors = append(r.Errors, e.Error())
	}
	if keeping != nil {
		keeping.report(&r)
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(reportPath, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	return 0
}

// confined runs op in a confined victim and returns its output lines and the
// supervisor's report.
func confined(t *testing.T, op ...string) ([]string, roleReport) {
	t.Helper()
	cmd, report := supervisorCmd(t, op...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("supervisor role: %v\n%s", err, out)
	}
	return strings.Fields(string(out)), readReport(t, report)
}

func supervisorCmd(t *testing.T, op ...string) (*exec.Cmd, string) {
	t.Helper()
	return roleCmd(t, "supervisor", op...)
}

// roleCmd is supervisorCmd with a choice of supervisor role.
func roleCmd(t testing.TB, role string, op ...string) (*exec.Cmd, string) {
	t.Helper()
	requireSeccomp(t)
	report := t.TempDir() + "/report.json"
	cmd := exec.Command(os.Args[0], "-test.run=^$", report)
	cmd.Env = append(os.Environ(), roleEnv+"="+role, "NETTRAP_VICTIM_OP="+strings.Join(op, " "))
	cmd.Stderr = os.Stderr
	return cmd, report
}

func readReport(t testing.TB, path string) roleReport {
	t.Helper()
	var r roleReport
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no supervisor report: %v", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 {
		t.Errorf("supervisor errors: %v", r.Errors)
	}
	return r
}

// requireSeccomp skips when the kernel cannot do user notification, except
// in CI, where a skip would hide that nothing was tested.
func requireSeccomp(t testing.TB) {
	t.Helper()
	var why string
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	switch {
	case err != nil:
		why = "no /proc/sys/kernel/seccomp/actions_avail: " + err.Error()
	case !strings.Contains(string(b), "user_notif"):
		why = "the kernel lacks SECCOMP_RET_USER_NOTIF"
	default:
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}
