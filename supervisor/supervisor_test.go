package supervisor_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder listens on ip (TCP and UDP, same port) and records the source
// address of every connection and datagram, in order of arrival.
type recorder struct {
	addr      string
	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every arrival
	conns     []string
	grams     []string
	sentinels []sentinel // counts' own, sent so far
}

// sentinel is one of counts' own connections or datagrams: it has
// arrived once addr is in list at from or after (from is the list's
// length before the sentinel was made). A source address alone does not
// tell (a confined process's datagram may have come from the port the
// sentinel's socket got later), so each sentinel takes exactly one
// arrival out of the count.
type sentinel struct {
	list *[]string
	addr string
	from int
}

func (s sentinel) in() bool {
	return slices.Contains((*s.list)[s.from:], s.addr)
}

func listen(t *testing.T, ip string) *recorder {
	t.Helper()
	return listenAt(t, ip, 0)
}

// listenAt is listen on a chosen port (0: any).
func listenAt(t *testing.T, ip string, port int) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: ln.Addr().String(), changed: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.arrived(&r.conns, c.RemoteAddr().String())
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			r.arrived(&r.grams, from.String())
		}
	}()
	return r
}

func (r *recorder) arrived(list *[]string, from string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*list = append(*list, from)
	close(r.changed)
	r.changed = make(chan struct{})
}

// tally counts the arrivals that are not sentinels, and reports whether
// every sentinel has arrived.
func (r *recorder) tally() (conns, grams int, sentinelsIn bool, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	conns, grams, sentinelsIn = len(r.conns), len(r.grams), true
	for _, s := range r.sentinels {
		if !s.in() {
			sentinelsIn = false
			continue
		}
		if s.list == &r.conns {
			conns--
		} else {
			grams--
		}
	}
	return conns, grams, sentinelsIn, r.changed
}

// counts returns the counters once they reach at least the given minimums
// (the accepting goroutine may lag behind the handshake) and everything
// sent before the call has been counted: it then sends a TCP and a UDP
// sentinel and waits for both. Accept and receive queues are FIFO and each
// is read in order, so a connection or datagram made before them (a leak
// included) is counted by then. The 20 s deadline only bounds a broken run.
func (r *recorder) counts(t *testing.T, minConns, minGrams int) (conns, grams int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	wait := func(what string, done func() bool) {
		t.Helper()
		for {
			_, _, _, changed := r.tally()
			if done() {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%s: %s never arrived", r.addr, what)
			}
		}
	}
	wait("the expected traffic", func() bool {
		c, g, _, _ := r.tally()
		return c >= minConns && g >= minGrams
	})
	for _, network := range []string{"tcp", "udp"} {
		r.mu.Lock()
		s := sentinel{list: &r.grams}
		if network == "tcp" {
			s.list = &r.conns
		}
		s.from = len(*s.list)
		r.mu.Unlock()
		c, err := net.Dial(network, r.addr)
		if err != nil {
			t.Fatalf("sentinel: %v", err)
		}
		s.addr = c.LocalAddr().String()
		r.mu.Lock()
		r.sentinels = append(r.sentinels, s)
		r.mu.Unlock()
		if _, err := c.Write([]byte("sentinel")); err != nil {
			t.Fatalf("sentinel: %v", err)
		}
		c.Close()
	}
	wait("the sentinels", func() bool {
		_, _, all, _ := r.tally()
		return all
	})
	conns, grams, _, _ = r.tally()
	return conns, grams
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("victim printed %v, want %v", got, want)
	}
}

func TestConnectAllowedAndDenied(t *testing.T) {
	ok, denied := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	out, rep := confined(t, "exec", "connect", ok.addr)
	expect(t, out, "ok")
	out, rep = confined(t, "connect", denied.addr)
	expect(t, out, "EPERM")
	if c, _ := ok.counts(t, 1, 0); c != 1 {
		t.Errorf("allowed listener saw %d connections, want 1", c)
	}
	if c, _ := denied.counts(t, 0, 0); c != 0 {
		t.Errorf("denied listener saw %d connections: the guard leaked", c)
	}
	if want := os.Getenv(engineEnv); want != "" && want != "auto" && rep.Engine != want {
		t.Errorf("engine %s, want %s", rep.Engine, want)
	}
	if rep.Denied != 1 || rep.Status != 0 {
		t.Errorf("report %+v, want one denial and status 0", rep)
	}
	// The decider asked Task who made the denied call, on what socket:
	// the victim (this binary), over TCP.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("tcp %s %s pid", exe, os.Args[0]); len(rep.Callers) != 1 || rep.Callers[0] != want {
		t.Errorf("callers %q, want [%q]", rep.Callers, want)
	}
	// And where it came from: the victim's connectTo, read from the
	// thread held in the call (decision.StackOf, callstack).
	if len(rep.Stacks) != 1 || !strings.HasPrefix(rep.Stacks[0], "victim_test.go:") || !strings.HasSuffix(rep.Stacks[0], "(supervisor_test.connectTo)") {
		t.Errorf("stacks %q, want the victim's connectTo in victim_test.go", rep.Stacks)
	}
}

// A confined program that execs another stays confined.
func TestExecStaysConfined(t *testing.T) {
	denied := listen(t, "127.0.0.2")
	out, _ := confined(t, "exec", "connect", denied.addr)
	expect(t, out, "EPERM")
	if c, _ := denied.counts(t, 0, 0); c != 0 {
		t.Errorf("denied listener saw %d connections after exec", c)
	}
}

// Bad pointers and lengths get the kernel's errno, never CONTINUE.
func TestMalformedArguments(t *testing.T) {
	denied := listen(t, "127.0.0.2")
	tests := []struct {
		op   []string
		want string
	}{
		{[]string{"connect-raw", "1", "16"}, "EFAULT"},
		{[]string{"connect-raw", "0", "16"}, "EFAULT"},
		{[]string{"connect-raw", "0xffffffffffff0000", "16"}, "EFAULT"},
		{[]string{"connect-len", "129", denied.addr}, "EINVAL"},
		{[]string{"connect-len", "-1", denied.addr}, "EINVAL"},
		{[]string{"connect-len", "8", denied.addr}, "EINVAL"},
		{[]string{"connect-len", "0", denied.addr}, "EINVAL"},
		// msg_namelen over sizeof(sockaddr_storage) is clamped by the
		// kernel, so the address still counts and is still denied.
		{[]string{"sendmsg-namelen", "4096", denied.addr}, "EPERM"},
		{[]string{"sendmsg-namelen", "-5", denied.addr}, "EINVAL"},
	}
	for _, tt := range tests {
		out, _ := confined(t, tt.op...)
		expect(t, out, tt.want)
	}
	if c, g := denied.counts(t, 0, 0); c+g != 0 {
		t.Errorf("denied listener saw %d connections and %d datagrams", c, g)
	}
}

// sendmmsg: one denied message denies the whole vector; a vlen larger than
// the vector ends at the first unreadable message, as in the kernel.
func TestSendmmsg(t *testing.T) {
	ok, denied := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	out, _ := confined(t, "sendmmsg", ok.addr, denied.addr)
	expect(t, out, "EPERM")
	out, _ = confined(t, "sendmmsg", ok.addr, ok.addr)
	expect(t, out, "sent:2")
	out, _ = confined(t, "sendmmsg-vlen", "0xffffffff", ok.addr)
	expect(t, out, "sent:1")
	if _, g := denied.counts(t, 0, 0); g != 0 {
		t.Errorf("denied listener saw %d datagrams", g)
	}
	if _, g := ok.counts(t, 0, 3); g != 3 {
		t.Errorf("allowed listener saw %d datagrams, want 3", g)
	}
}

// Attaching to an unconfined process would let the confined one drive it.
// A confined ancestor is no better a target for pidfd_getfd: under
// nettrap -- go test that may be the go command, holding the sockets of
// its own allowed calls (toolchain), or the nettrap that wraps the test
// binary, holding its connection to the hub (the victim's child takes
// from the victim here).
func TestCrossProcessAccessDenied(t *testing.T) {
	for _, op := range [][]string{{"ptrace-parent"}, {"pidfd-getfd-parent"}, {"exec", "pidfd-getfd-parent"}} {
		out, _ := confined(t, op...)
		expect(t, out, "EPERM")
	}
}

// A source route would send the packet to the hop, not to the loopback
// destination that was checked.
func TestSourceRouteDenied(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	out, _ := confined(t, "setsockopt-lsrr", "127.0.0.2:0")
	expect(t, out, "EPERM")
	out, _ = confined(t, "sendmsg-retopts", ok.addr, "127.0.0.2:0")
	expect(t, out, "EPERM")
	out, _ = confined(t, "sendmsg-retopts", ok.addr)
	expect(t, out, "ok")
	if _, g := ok.counts(t, 0, 1); g != 1 {
		t.Errorf("listener got %d datagrams, want only the one without a source route", g)
	}
}

func TestRawSocketDenied(t *testing.T) {
	out, _ := confined(t, "socket-raw")
	expect(t, out, "EPERM")
}

// Many threads in a trapped call at once: all are answered.
func TestManyConcurrentConnects(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	out, rep := confined(t, "many-connect", "1000", ok.addr)
	expect(t, out, "ok:1000")
	if rep.Notifications < 1000 {
		t.Errorf("only %d notifications for 1000 connects", rep.Notifications)
	}
}

// TestKeptCallsStay: a call the decider may keep is never used for
// another one, and one it says it keeps nothing of (Answer.Unkept) is:
// the notify engine recycles the calls of plain allowed connects.
func TestKeptCallsStay(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	for _, mode := range []string{"kept", "unkept"} {
		out, rep := confinedWith(t, []string{keepEnv + "=" + mode}, "many-connect", "200", ok.addr)
		expect(t, out, "ok:200")
		if rep.Decided < 200 {
			t.Fatalf("%s: %d calls decided, want the 200 connects", mode, rep.Decided)
		}
		switch {
		case mode == "kept" && (rep.KeptReused != 0 || rep.DistinctCalls != rep.Decided):
			t.Errorf("kept: %d of %d kept calls reused, %d distinct: a call the decider kept was used again",
				rep.KeptReused, rep.Decided, rep.DistinctCalls)
		case mode == "unkept" && rep.Engine == "notify" && rep.DistinctCalls >= rep.Decided:
			t.Errorf("unkept: %d decisions in %d distinct calls: none recycled", rep.Decided, rep.DistinctCalls)
		}
	}
}

// A target killed while its call waits for a decision: the loop drops it
// and goes on serving.
func TestTargetKilledMidCall(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	out, rep := confined(t, "kill-mid-call", "127.0.0.3:9", ok.addr)
	expect(t, out, "ok")
	if rep.Vanished < 1 {
		t.Errorf("report %+v: the killed call was not seen to vanish", rep)
	}
}

// A decision that takes long (a decider that drains a test's output) does
// not hold up other threads' calls: with a decider that decides every
// call where it is received, the notify loop's watchdog passes the turn
// to a new receiver while the slow one waits (the ptrace engine decides
// each tracee's calls apart, so it holds up nothing either).
func TestSlowDecisionHoldsUpNoOther(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	out, _ := confinedWith(t, []string{asideEnv + "=1"}, "held-aside", "127.0.0.3:9", ok.addr)
	expect(t, out, "ok")
	if c, _ := ok.counts(t, 1, 0); c != 1 {
		t.Errorf("allowed listener saw %d connections, want 1", c)
	}
}

// If the supervisor dies, confined calls fail (ENOSYS): closed, not open.
// The victim here opts out of dying with the supervisor, as a grandchild
// (which PR_SET_PDEATHSIG does not reach) would.
func TestSupervisorKilled(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	dir := t.TempDir()
	cmd, _ := roleCmd(t, "supervisor-keep", "wait-connect", dir, ok.addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFile(dir + "/ready") {
		cmd.Process.Kill()
		t.Fatal("the victim never started")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	expectCutOff(t, ok, dir, "after the supervisor died")
}

// A SIGKILLed supervisor takes its child with it (PR_SET_PDEATHSIG, tied
// to the thread that forked it, which lives as long as the session).
func TestChildDiesWithSupervisor(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	dir := t.TempDir()
	cmd, _ := supervisorCmd(t, "wait-connect", dir, ok.addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFile(dir + "/ready") {
		cmd.Process.Kill()
		t.Fatal("the victim never started")
	}
	b, _ := os.ReadFile(dir + "/ready")
	pid, err := strconv.Atoi(string(b))
	if err != nil || !alive(pid) {
		cmd.Process.Kill()
		t.Fatalf("victim pid %q (%v) not running", b, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The supervisor's exit sent the victim its SIGKILL before Wait
	// returned: from now on it cannot complete another call. Let it go
	// on; one that survived would connect and write its result.
	os.WriteFile(dir+"/go", nil, 0o644)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(dir + "/result"); err == nil || !alive(pid) {
			break
		}
	}
	if b, err := os.ReadFile(dir + "/result"); err == nil || alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the victim %d outlived its SIGKILLed supervisor (its connect: %q)", pid, b)
	}
}

// alive: pid is a running process, neither gone nor a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && !strings.HasPrefix(string(b)[i+1:], " Z")
}

// waitFile waits for a file another process writes (a handshake, not a
// timing assertion: the deadline only bounds a broken run).
func waitFile(path string) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && (st.Size() > 0 || filepath.Base(path) != "result") {
			return true
		}
	}
	return false
}

// The test-only switches that withhold WAIT_KILLABLE_RECV (5.19) and
// SYNC_WAKE_UP (6.6), for what older kernels pay: the session says it
// went without them, and a call is still allowed or denied, with nothing
// reaching the denied listener.
func TestWithheldKernelFeatures(t *testing.T) {
	if e := os.Getenv(engineEnv); e == "ptrace" {
		t.Skip("the notify engine's features; NETTRAP_SUPERVISOR_TEST_ENGINE=ptrace")
	}
	ok, denied := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	for _, op := range [][]string{{"connect", ok.addr}, {"connect", denied.addr}} {
		cmd, report := supervisorCmd(t, op...)
		cmd.Env = append(cmd.Env, "NETTRAP_TEST_NO_KILLABLE_RECV=1", "NETTRAP_TEST_NO_SYNC_WAKEUP=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("supervisor role: %v\n%s", err, out)
		}
		rep := readReport(t, report)
		if rep.Engine != "notify" {
			t.Skipf("engine %s: the switches are the notify engine's", rep.Engine)
		}
		if rep.KillableRecv || rep.SyncWakeUp {
			t.Errorf("killable recv %v, sync wake-up %v: want both withheld", rep.KillableRecv, rep.SyncWakeUp)
		}
		want := "ok"
		if op[1] == denied.addr {
			want = "EPERM"
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%v: victim printed %q, want %q", op, got, want)
		}
	}
	if c, _ := ok.counts(t, 1, 0); c != 1 {
		t.Errorf("allowed listener saw %d connections, want 1", c)
	}
	if c, _ := denied.counts(t, 0, 0); c != 0 {
		t.Errorf("denied listener saw %d connections: the guard leaked", c)
	}
}
