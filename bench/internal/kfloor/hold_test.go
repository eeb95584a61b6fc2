package main

import (
	"bytes"
	"fmt"
	"github.com/nettrap/nettrap/cgroupbpf"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Victim operations of the hold's tests (victimArg heldArg OP).
const (
	heldArg = "held"
	opSend  = "send"    // one UDP sendto to heldDest
	opConn  = "connect" // one TCP connect to heldDest
	opFlip  = "flip"    // flipSends sends while another goroutine flips the address
	opLoop  = "loop"    // N UDP sendtos to heldDest, timed (BenchmarkHeldDenied)
	opSwap  = "swap"    // swapSends sends on one number another goroutine dup2s two sockets onto
	// markSends sends, each after (opMarkAfter: before) a line on stdout
	// that marks it, as a test's output marks the test.
	opMark, opMarkAfter = "mark", "markafter"
	opGo                = "goroutine" // one UDP sendto to heldDest from a goroutine it starts
	opRedirect          = "redirect"  // sends redirected to its listeners, and one refused
	opUnix              = "unix"      // connects and sends to unixCases' addresses
)

// TestHoldRedirect's destinations: the "nameservers" it redirects to a
// listener of the victim's (as nettrap sends a lookup to its DNS
// sinkhole), and one it refuses with an errno of its choice.
var (
	dnsDest4    = netip.MustParseAddrPort("192.0.2.53:53")
	dnsDest6    = netip.MustParseAddrPort("[2001:db8::53]:53")
	refusedDest = netip.MustParseAddrPort("198.51.100.7:9")
	redirect4   = netip.MustParseAddrPort("127.0.0.1:5353")
	redirect6   = netip.MustParseAddrPort("[::1]:5353")
)

var (
	heldDest   = netip.MustParseAddrPort("192.0.2.1:9")     // no route in the victim's namespace
	heldDest6  = netip.MustParseAddrPort("[2001:db8::1]:9") // nor to this
	flipDenied = netip.MustParseAddrPort("198.51.100.1:9")  // on the victim's lo, with a listener
)

const flipSends = 3000

// testDeadline is how long the tests' programs hold a call no one
// answers: longer than any test waits.
const testDeadline = 30 * time.Second

// BenchmarkHeldDenied: what a held call costs when user space denies it
// at once (the slow path of an engine built on the hold: reported on
// the ring buffer, read, decided, written, applied at the next try),
// ns per call as the caller sees it. Weigh it against the notify
// engine's denied call (bench's runners time allowed ones).
func BenchmarkHeldDenied(b *testing.B) {
	needRoot(b)
	for _, c := range []struct {
		name string
		sig  cgroupbpf.Signal
	}{{"sigurg", cgroupbpf.SignalURG}, {"sigstop", cgroupbpf.SignalStop}, {"by-handler", cgroupbpf.SignalByHandler}} {
		b.Run(c.name, func(b *testing.B) {
			dir, stop := startHolderWith(b, c.sig, testDeadline, func(cgroupbpf.Held) (bool, bool) { return false, true })
			defer stop()
			out := runHeld(b, dir, opLoop+strconv.Itoa(max(b.N, 10)))
			var ns int64
			var errno string
			if _, err := fmt.Sscanf(out, "%d %s", &ns, &errno); err != nil {
				b.Fatalf("victim printed %q: %v", out, err)
			}
			if errno != "operation" { // "operation not permitted"
				b.Fatalf("the held sends ended with %q, want EPERM", out)
			}
			b.ReportMetric(float64(ns), "held-ns/op")
		})
	}
}

// startHolder attaches the hold programs (connect4/6, sendmsg4/6) to a new
// cgroup and serves their events with decide; stop detaches them.
func startHolder(t testing.TB, deadline time.Duration, decide func(cgroupbpf.Held) (allow, answer bool)) (dir string, stop func()) {
	t.Helper()
	return startHolderWith(t, cgroupbpf.SignalURG, deadline, decide)
}

// startHolderWith is startHolder, taking held threads out of their call
// with sig.
func startHolderWith(t testing.TB, sig cgroupbpf.Signal, deadline time.Duration, decide func(cgroupbpf.Held) (allow, answer bool)) (dir string, stop func()) {
	t.Helper()
	return startHolderVerdicts(t, sig, deadline, func(c cgroupbpf.Held) (cgroupbpf.Verdict, bool) {
		allow, answer := decide(c)
		if allow {
			return cgroupbpf.Allow(), answer
		}
		return cgroupbpf.Deny(unix.EPERM), answer
	})
}

// startHolderVerdicts is startHolderWith with a decider that gives any
// verdict.
func startHolderVerdicts(t testing.TB, sig cgroupbpf.Signal, deadline time.Duration, decide func(cgroupbpf.Held) (cgroupbpf.Verdict, bool)) (dir string, stop func()) {
	t.Helper()
	h, err := cgroupbpf.NewHold(kfloorHold(sig, deadline))
	if err != nil {
		t.Fatal(err)
	}
	var closers []func() error
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		h.Close()
	}
	dir, remove, err := cgroupbpf.MakeCgroup("kfloor")
	if err != nil {
		cleanup()
		t.Fatal(err)
	}
	closers = append(closers, func() error { remove(); return nil })
	for _, hk := range hooks {
		at := hk.attach
		p, err := h.Program(at)
		if err != nil {
			cleanup()
			holdUnsupported(t, err)
		}
		closers = append(closers, p.Close)
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: at, Program: p})
		if err != nil {
			cleanup()
			t.Fatal(err)
		}
		closers = append(closers, l.Close)
	}
	rd, err := h.Reader()
	if err != nil {
		cleanup()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(rd, nil, decide) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			rd.Close()
			if err := <-served; err != nil {
				t.Errorf("serving the held calls: %v", err)
			}
			cleanup()
		})
	}
	t.Cleanup(stop) // also when the test stops early
	return dir, stop
}

// holdUnsupported skips (fails under CI=true) where the kernel refuses
// the hold program: Debian's 6.1 knows no bpf_send_signal_thread, its
// 6.12 refuses it in a cgroup program; 6.18 allows it.
func holdUnsupported(t testing.TB, err error) {
	t.Helper()
	// Only the helper's absence is the kernel's; any other refusal is
	// the program's fault.
	if e := err.Error(); !strings.Contains(e, "bpf_send_signal_thread") && !strings.Contains(e, "unknown func") {
		t.Fatalf("the verifier refuses the hold program: %v", err)
	}
	msg := fmt.Sprintf("this kernel refuses a program that holds a call (bpf_set_retval 5.18+, bpf_send_signal_thread in a cgroup program, after 6.12): %v", err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func runHeld(t testing.TB, dir, op string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := heldCmd(t, dir, exe, victimArg, heldArg, op)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("victim %s: %v\n%s", op, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// heldCmd is argv, to be started in the cgroup dir and, by rule one, in
// a network namespace of its own (only lo, down until it brings it up).
func heldCmd(t testing.TB, dir string, argv ...string) *exec.Cmd {
	t.Helper()
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.Close() })
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd()), Cloneflags: syscall.CLONE_NEWNET}
	return cmd
}

// TestHoldVerdicts: a held call waits for user space's verdict, gets it
// (let through: the kernel finds no route; refused: EPERM), and the
// caller's other goroutines run meanwhile.
func TestHoldVerdicts(t *testing.T) {
	needRoot(t)
	const hold = 200 * time.Millisecond
	for _, c := range []struct {
		op    string
		allow bool
		want  unix.Errno
	}{
		{opSend, true, unix.ENETUNREACH}, {opSend, false, unix.EPERM},
		{opConn, true, unix.ENETUNREACH}, {opConn, false, unix.EPERM},
		{opSend + "6", true, unix.ENETUNREACH}, {opSend + "6", false, unix.EPERM},
		{opConn + "6", true, unix.ENETUNREACH}, {opConn + "6", false, unix.EPERM},
	} {
		t.Run(fmt.Sprintf("%s-allow=%v", c.op, c.allow), func(t *testing.T) {
			var mu sync.Mutex
			var seen []cgroupbpf.Held
			// A Go victim handles SIGURG: the program reads that.
			dir, stop := startHolderWith(t, cgroupbpf.SignalByHandler, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
				time.Sleep(hold)
				mu.Lock()
				seen = append(seen, h)
				mu.Unlock()
				return c.allow, true
			})
			out := runHeld(t, dir, c.op)
			stop()
			f := strings.Split(out, "|")
			if len(f) != 3 {
				t.Fatalf("victim printed %q", out)
			}
			took, _ := strconv.Atoi(f[1])
			ticks, _ := strconv.Atoi(f[2])
			t.Logf("%s after %d ms, the other goroutine ticked %d times; held: %v", f[0], took, ticks, seen)
			if f[0] != c.want.Error() || time.Duration(took)*time.Millisecond < hold || ticks < 10 {
				t.Errorf("got %q after %d ms (%d ticks of the other goroutine); want %q after at least %v, the other goroutine running", f[0], took, ticks, c.want, hold)
			}
			dest := heldDest
			if strings.HasSuffix(c.op, "6") {
				dest = heldDest6
			}
			typ := unix.SOCK_DGRAM
			if strings.HasPrefix(c.op, opConn) {
				typ = unix.SOCK_STREAM
			}
			if len(seen) != 1 || seen[0].Dest != dest || seen[0].TID == 0 || seen[0].Cookie == 0 ||
				seen[0].Netns == 0 || seen[0].Type != typ || seen[0].Stopped {
				t.Errorf("held calls %+v; want one, to %v, with its thread, socket, namespace, type %d, not stopped (SIGURG)", seen, dest, typ)
			}
			if len(seen) == 1 {
				h := seen[0]
				if typ == unix.SOCK_STREAM && h.Nr != unix.SYS_CONNECT {
					t.Errorf("held connect reported as syscall %d, want %d", h.Nr, unix.SYS_CONNECT)
				}
				if typ == unix.SOCK_DGRAM && (h.Nr != unix.SYS_SENDTO && h.Nr != unix.SYS_SENDMSG || h.Source.Port() == 0) {
					t.Errorf("held send reported as syscall %d from %v, want sendto or sendmsg from a bound port", h.Nr, h.Source)
				}
			}
		})
	}
}

// TestHoldFlip: another thread flips the address in memory while the call
// is held. Each try copies it again; a verdict applies only to the
// destination it was given for, so a denied destination never gets
// through, however the flips fall.
func TestHoldFlip(t *testing.T) {
	needRoot(t)
	var mu sync.Mutex
	seen := map[netip.AddrPort]int{}
	dir, stop := startHolder(t, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
		mu.Lock()
		seen[h.Dest]++
		mu.Unlock()
		return h.Dest == heldDest, true
	})
	out := runHeld(t, dir, opFlip)
	stop()
	var eperm, unreach, ok, arrived int
	if _, err := fmt.Sscanf(out, "eperm %d unreach %d ok %d arrived %d", &eperm, &unreach, &ok, &arrived); err != nil {
		t.Fatalf("victim printed %q: %v", out, err)
	}
	t.Logf("%d sends: %d EPERM, %d ENETUNREACH, %d through, %d arrived at the denied destination; held %v", flipSends, eperm, unreach, ok, arrived, seen)
	if ok != 0 || arrived != 0 {
		t.Errorf("%d sends got through and %d datagrams arrived at %v, which the decider denied", ok, arrived, flipDenied)
	}
	if eperm+unreach != flipSends || eperm == 0 || unreach == 0 || seen[heldDest] == 0 || seen[flipDenied] == 0 {
		t.Errorf("want every send held and decided, both ways: %d EPERM, %d ENETUNREACH of %d; held %v", eperm, unreach, flipSends, seen)
	}
}

// TestHoldSwap: another thread dup2s a second socket onto the descriptor
// number while the call is held. Each try looks the number up again; a
// verdict applies only to the socket it was given for, so the socket the
// decider never allowed sends nothing, however the swaps fall.
func TestHoldSwap(t *testing.T) {
	needRoot(t)
	var mu sync.Mutex
	var first uint64
	cookies := map[uint64]int{}
	dir, stop := startHolder(t, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first == 0 {
			first = h.Cookie // socket A's: the victim's first send is A's alone
		}
		cookies[h.Cookie]++
		return h.Cookie == first, true
	})
	out := runHeld(t, dir, opSwap)
	stop()
	var ok, eperm, fromA, fromB int
	if _, err := fmt.Sscanf(out, "ok %d eperm %d fromA %d fromB %d", &ok, &eperm, &fromA, &fromB); err != nil {
		t.Fatalf("victim printed %q: %v", out, err)
	}
	t.Logf("%d sends: %d through, %d EPERM; arrived from A %d, from B %d; held per socket %v", swapSends+1, ok, eperm, fromA, fromB, cookies)
	if fromB != 0 {
		t.Errorf("%d datagrams arrived from socket B, which the decider never allowed", fromB)
	}
	if ok+eperm != swapSends+1 || ok == 0 || eperm == 0 || fromA == 0 || len(cookies) != 2 {
		t.Errorf("want every send decided, both ways, A's arriving and both sockets held: %d through, %d EPERM of %d; from A %d; held %v",
			ok, eperm, swapSends+1, fromA, cookies)
	}
}

// TestHoldDeadline: a call no one answers fails closed (EPERM) at the
// program's deadline instead of hanging its caller.
func TestHoldDeadline(t *testing.T) {
	needRoot(t)
	const deadline = 300 * time.Millisecond
	held := 0
	var mu sync.Mutex
	dir, stop := startHolder(t, deadline, func(cgroupbpf.Held) (bool, bool) {
		mu.Lock()
		held++
		mu.Unlock()
		return false, false // no answer
	})
	out := runHeld(t, dir, opSend)
	stop()
	f := strings.Split(out, "|")
	if len(f) != 3 {
		t.Fatalf("victim printed %q", out)
	}
	took, _ := strconv.Atoi(f[1])
	t.Logf("%s after %d ms, held %d times", f[0], took, held)
	if f[0] != unix.EPERM.Error() || time.Duration(took)*time.Millisecond < deadline || held != 1 {
		t.Errorf("got %q after %d ms, reported %d times; want %q after at least %v, reported once", f[0], took, held, unix.EPERM, deadline)
	}
}

// TestHoldSignal: the signal that takes a held caller out and back into
// its call. SIGURG's default action is to be ignored, and the kernel
// discards an ignored signal: a program that does not handle it (bash,
// here; Go's runtime handles it) is not restarted, and its call fails
// with errno 513, closed but with an error no caller knows. SIGSTOP
// cannot be ignored: the whole process stops at the call's first try and
// the holder continues it once the verdict is written.
func TestHoldSignal(t *testing.T) {
	needRoot(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	for _, c := range []struct {
		name  string
		sig   cgroupbpf.Signal
		allow bool
		want  string
	}{
		{"sigurg", cgroupbpf.SignalURG, false, "Unknown error 513"},
		{"sigstop-deny", cgroupbpf.SignalStop, false, "Operation not permitted"},
		{"sigstop-allow", cgroupbpf.SignalStop, true, "Network is unreachable"},
		// bash does not handle SIGURG: the program reads that and stops it.
		{"by-handler-deny", cgroupbpf.SignalByHandler, false, "Operation not permitted"},
		{"by-handler-allow", cgroupbpf.SignalByHandler, true, "Network is unreachable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, stop := startHolderWith(t, c.sig, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
				if c.sig == cgroupbpf.SignalByHandler && !h.Stopped {
					t.Errorf("bash's held call was not stopped: the program chose SIGURG for a process that ignores it")
				}
				return c.allow, true
			})
			defer stop()
			// bash opens /dev/udp/... with a UDP socket and a connect.
			cmd := heldCmd(t, dir, bash, "-c", "echo x >/dev/udp/"+heldDest.Addr().String()+"/9")
			out, err := cmd.CombinedOutput()
			t.Logf("bash: %v: %s", err, out)
			if err == nil || !strings.Contains(string(out), c.want) {
				t.Errorf("bash said %q (%v); want it to fail with %q", out, err, c.want)
			}
		})
	}
}

// TestHoldRedirect: the verdicts beyond allow and EPERM that nettrap
// gives. A redirect rewrites the kernel's copy of the destination (IPv4
// and IPv6), as nettrap sends a denied lookup to its DNS sinkhole; a
// denial carries the errno nettrap was told to answer with (--errno).
func TestHoldRedirect(t *testing.T) {
	needRoot(t)
	dir, stop := startHolderVerdicts(t, cgroupbpf.SignalURG, testDeadline, func(h cgroupbpf.Held) (cgroupbpf.Verdict, bool) {
		switch h.Dest {
		case dnsDest4:
			return cgroupbpf.RedirectTo(redirect4), true
		case dnsDest6:
			return cgroupbpf.RedirectTo(redirect6), true
		}
		return cgroupbpf.Deny(unix.ECONNREFUSED), true
	})
	out := runHeld(t, dir, opRedirect)
	stop()
	want := "ok,ok," + unix.ECONNREFUSED.Error() + " | q4 | q6"
	if out != want {
		t.Errorf("victim: %q; want %q", out, want)
	}
}
