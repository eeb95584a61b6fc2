package supervisor_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/landlock"
)

// confinedMode is confined with a chosen emulation mode.
func confinedMode(t *testing.T, mode string, op ...string) ([]string, roleReport) {
	t.Helper()
	cmd, report := supervisorCmd(t, op...)
	cmd.Env = append(cmd.Env, emulateEnv+"="+mode)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("supervisor role (emulate=%s): %v\n%s", mode, err, out)
	}
	return strings.Fields(string(out)), readReport(t, report)
}

// Allowed inet calls are made by the supervisor when emulation is on, and
// continue in the kernel when it is off; the victim sees the same results.
func TestEmulatedAllowedCalls(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	for _, mode := range []string{"on", "off"} {
		out, rep := confinedMode(t, mode, "connect", ok.addr)
		expect(t, out, "ok")
		out, rep2 := confinedMode(t, mode, "sendmmsg", ok.addr, ok.addr)
		expect(t, out, "sent:2")
		emulated := rep.Emulated + rep2.Emulated
		if mode == "on" && emulated != 2 {
			t.Errorf("emulate=on: %d calls emulated, want 2 (connect, sendmmsg)", emulated)
		}
		if mode == "off" && emulated != 0 {
			t.Errorf("emulate=off: %d calls emulated, want 0", emulated)
		}
	}
	if c, g := ok.counts(t, 2, 4); c != 2 || g != 4 {
		t.Errorf("listener saw %d connections and %d datagrams, want 2 and 4", c, g)
	}
}

// A connect on a descriptor that is no socket says ENOTSOCK, as in the
// kernel, whether emulated or not, and whatever the address (an inet one
// is made on the borrowed descriptor, another asks the socket's family).
func TestEmulatedConnectNotSocket(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	for _, mode := range []string{"on", "off"} {
		for _, to := range []string{ok.addr, "unix"} {
			out, rep := confinedMode(t, mode, "connect-notsock", to)
			expect(t, out, "ENOTSOCK")
			if want := map[string]uint64{"on": 1, "off": 0}[mode]; rep.Emulated != want {
				t.Errorf("emulate=%s, connect to %s: %d calls answered by nettrap, want %d", mode, to, rep.Emulated, want)
			}
		}
	}
	// Checked for its peers, as under --sealed: still the caller's own
	// ENOTSOCK (the peer check's getsockopt fails first).
	out, _ := confinedWith(t, []string{emulateEnv + "=on", peerCheckEnv + "=1"}, "connect-notsock", ok.addr)
	expect(t, out, "ENOTSOCK")
}

// The CONTINUE race: a thread flipping the sockaddr between an allowed
// and a denied address gets connects through to the denied one when the
// kernel re-reads the address, and none when the call is emulated.
func TestEmulationClosesTheRace(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	port := ok.addr[strings.LastIndexByte(ok.addr, ':')+1:]
	p, _ := strconv.Atoi(port)
	denied := listenAt(t, "127.0.0.2", p)

	// First show that the test can see the race: without emulation some
	// connect reaches the denied address (bounded: a leak usually comes
	// within a few thousand tries on two cores).
	out, _ := confinedMode(t, "off", "race-connect", ok.addr, denied.addr, "400000", "until-leak")
	if len(out) != 1 || out[0] == "leaked:0" {
		t.Fatalf("emulate=off: the race never showed (%v): this test could not see a leak", out)
	}
	leaks, _ := denied.counts(t, 1, 0)
	t.Logf("emulate=off: %s, denied listener saw %d", out, leaks)

	before, _ := denied.counts(t, 0, 0)
	out, rep := confinedMode(t, "on", "race-connect", ok.addr, denied.addr, "20000")
	expect(t, out, "leaked:0")
	if after, _ := denied.counts(t, 0, 0); after != before {
		t.Errorf("emulate=on: %d connections reached the denied address", after-before)
	}
	if rep.Emulated == 0 {
		t.Errorf("emulate=on: no call was emulated (%+v)", rep)
	}
	t.Logf("emulate=on: 20000 tries, %d emulated, %d denied", rep.Emulated, rep.Denied)
}

// A denied call with a Redirect goes to the stand-in instead, on the
// target's own socket: the target's traffic arrives there from the local
// address Done was told, and the stand-in's reply reaches the target.
// Without emulation the call fails as decided, and Done hears so.
func TestRedirectToStandIn(t *testing.T) {
	for _, how := range []string{"connect", "sendto"} {
		t.Run(how, func(t *testing.T) { testRedirect(t, how) })
	}
}

func testRedirect(t *testing.T, how string) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	from := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		from <- addr.String() + " " + string(buf[:n])
		pc.WriteTo([]byte("refused"), addr)
	}()
	run := func(mode string) ([]string, roleReport) {
		cmd, report := supervisorCmd(t, "udp-exchange", "127.0.0.4:53", how)
		cmd.Env = append(cmd.Env, emulateEnv+"="+mode, standInEnv+"="+pc.LocalAddr().String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("supervisor role: %v\n%s", err, out)
		}
		return strings.Fields(string(out)), readReport(t, report)
	}
	out, rep := run("off")
	expect(t, out, "EPERM")
	if fmt.Sprint(rep.Redirects) != "[failed]" {
		t.Errorf("emulate=off: Done heard %v, want [failed]", rep.Redirects)
	}
	out, rep = run("on")
	expect(t, out, "ok", "ok", "reply:refused")
	var got string
	select {
	case got = <-from:
	case <-time.After(20 * time.Second):
		t.Fatal("nothing reached the stand-in")
	}
	if len(rep.Redirects) != 1 || "ok "+got != rep.Redirects[0]+" query" {
		t.Errorf("stand-in got %q, Done heard %v: want the same local address", got, rep.Redirects)
	}
}

// The descriptor race on pidfd_getfd: a thread swapping a pidfd of an
// unconfined process (this test's) onto the number of the caller's own
// pidfd gets the unconfined process's descriptors when the kernel looks
// the number up again; none when nettrap takes the descriptor itself
// (notify), or runs the call as the dup it is (ptrace). With
// --userns=off: as root in a user namespace of its own (auto) the victim
// may take no descriptor of this process at all (the kernel refuses), so
// no leak would show.
func TestPidfdGetfdRace(t *testing.T) {
	skipUnderNettrap(t, "the nettrap confining this test decides every pidfd_getfd first, and denies the race this test must see leak")
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A number the victim has no descriptor at (close-on-exec here).
	const theirs = 213
	if err := unix.Dup3(int(f.Fd()), theirs, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(theirs)
	pid, fd := strconv.Itoa(os.Getpid()), strconv.Itoa(theirs)

	// Without the tree's Landlock domain, which refuses the victim every
	// pidfd_getfd on this (outside) process whatever nettrap lets
	// through: the race is nettrap's to close, and shows only there.
	mode := func(emulate string, op ...string) ([]string, roleReport) {
		return confinedWith(t, []string{emulateEnv + "=" + emulate, usernsEnv + "=off", landlock.NoLandlockEnv + "=1"}, op...)
	}
	out, _ := mode("off", "pidfd-getfd-race", pid, fd, "400000", "until-leak")
	if len(out) != 1 || out[0] == "took:0" {
		t.Fatalf("emulate=off: the race never showed (%v): this test could not see a leak", out)
	}
	out, rep := mode("on", "pidfd-getfd-race", pid, fd, "20000")
	expect(t, out, "took:0")
	if rep.Emulated == 0 {
		t.Errorf("emulate=on: no pidfd_getfd was made by nettrap (%+v)", rep)
	}
	t.Logf("emulate=on: 20000 tries, %d emulated, %d denied", rep.Emulated, rep.Denied)
	if landlock.Choose(false).Kind != landlock.None {
		// In the domain, the kernel refuses the swapped pidfd too.
		out, _ = confinedWith(t, []string{emulateEnv + "=off", usernsEnv + "=off"}, "pidfd-getfd-race", pid, fd, "20000")
		expect(t, out, "took:0")
	}
}

// pidfd_getfd through a pidfd of the caller's child that exited and was
// reaped fails as the kernel's (ESRCH) in every mode, and is no denial:
// whatever the descriptor number names by then, nothing is taken (a
// debugger's, or a nettrap's inside, whose child died while it decided).
func TestPidfdGetfdReaped(t *testing.T) {
	for _, mode := range []string{"on", "auto", "off"} {
		out, rep := confinedMode(t, mode, "pidfd-getfd-reaped")
		expect(t, out, "ESRCH")
		if rep.Denied != 0 || len(rep.Errors) != 0 {
			t.Errorf("emulate=%s: %d denied, errors %q; want none", mode, rep.Denied, rep.Errors)
		}
	}
}

// An allowed pidfd_getfd on the caller's own pidfd works as the kernel's:
// a working descriptor, close-on-exec.
func TestPidfdGetfdSelf(t *testing.T) {
	for _, mode := range []string{"on", "auto", "off"} {
		out, _ := confinedMode(t, mode, "pidfd-getfd-self")
		expect(t, out, "ok")
	}
}
