package bpf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv makes the re-executed test binary act as the confined child of
// TestInstallSmoke. The filter is only ever installed there, never in the
// go test process itself.
const childEnv = "NETTRAP_BPF_INSTALL_CHILD"

// exitSkip is the child's exit status for "seccomp refused here".
const exitSkip = 3

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(installChild())
	}
	os.Exit(m.Run())
}

// skipOrFatal skips with reason, except under CI=true where the
// environment is expected to support seccomp.
func skipOrFatal(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but: %s", reason)
	}
	t.Skip(reason)
}

func TestDetect(t *testing.T) {
	f := Detect()
	if err := f.Check(); err != nil {
		skipOrFatal(t, err.Error())
	}
	// struct seccomp_data is 64 bytes, seccomp_notif 80 and
	// seccomp_notif_resp 24 on every kernel that has user notification.
	want := NotifSizes{Notif: 80, NotifResp: 24, Data: 64}
	if f.NotifSizes != want {
		t.Errorf("NotifSizes = %+v, want %+v", f.NotifSizes, want)
	}
	if f.WaitKillableRecv && !f.NewListener {
		t.Error("WaitKillableRecv without NewListener")
	}
	// An unknown flag must be reported unknown, or the probe proves nothing.
	if flagKnown(1 << 30) {
		t.Error("flag 1<<30 probed as known")
	}
}

func TestFeaturesCheck(t *testing.T) {
	full := Features{Filter: true, UserNotif: true, KillProcess: true, NewListener: true}
	if err := full.Check(); err != nil {
		t.Errorf("full features: %v", err)
	}
	for _, f := range []Features{{}, {Filter: true}, {Filter: true, UserNotif: true, NewListener: true}} {
		if f.Check() == nil {
			t.Errorf("%+v: Check() = nil, want an error", f)
		}
	}
}

func TestInstallRejectsBadLength(t *testing.T) {
	// Install must refuse before it touches the thread (prctl), so this
	// is safe in the test process.
	for _, n := range []int{0, unix.BPF_MAXINSNS + 1} {
		if _, _, err := Install(make([]unix.SockFilter, n)); err == nil {
			t.Errorf("Install(%d instructions) succeeded", n)
		}
	}
}

// TestInstallSmoke re-executes the test binary; the child installs the
// real filter on a locked thread and checks, on the real kernel, that the
// listener is valid, that an allowed socket() does not stop, that
// connect() raises a notification, and that with the listener closed the
// connect fails with ENOSYS (fail closed).
func TestInstallSmoke(t *testing.T) {
	f := Detect()
	if err := f.Check(); err != nil {
		skipOrFatal(t, err.Error())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == exitSkip {
		skipOrFatal(t, "child could not install the filter: "+strings.TrimSpace(string(out)))
	}
	if err != nil && strings.Contains(string(out), unix.EBUSY.Error()) {
		// Only one listener per filter chain: under nettrap (its own
		// suite run under nettrap) or WSL2's init, a skip even in CI.
		t.Skipf("a seccomp listener is installed above this test, and a chain has only one: %s", strings.TrimSpace(string(out)))
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	wantKillable := fmt.Sprintf("killable=%v", f.WaitKillableRecv)
	for _, want := range []string{"cloexec=true", wantKillable, "notified=true", "connect=" + unix.ENOSYS.Error()} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

// installChild runs in the re-executed binary. Exit 0 = checks done (the
// parent reads the report), exitSkip = seccomp refused, 1 = failure.
func installChild() int {
	prog, err := Assemble(runtime.GOARCH)
	if err != nil {
		fmt.Println("assemble:", err)
		return 1
	}
	type installed struct {
		fd       int
		killable bool
		err      error
	}
	ready := make(chan installed)
	result := make(chan string)
	go func() {
		// This goroutine's thread gets the filter and dies with it.
		runtime.LockOSThread()
		fd, killable, err := Install(prog)
		ready <- installed{fd, killable, err}
		if err != nil {
			return
		}
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			result <- "socket=" + err.Error()
			return
		}
		// Loopback discard port: the call stops in the filter and never
		// reaches the network stack.
		err = unix.Connect(s, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}})
		result <- fmt.Sprintf("connect=%v", err)
	}()
	in := <-ready
	if in.err != nil {
		fmt.Println("install:", in.err)
		if errors.Is(in.err, unix.EACCES) || errors.Is(in.err, unix.EPERM) || errors.Is(in.err, unix.ENOSYS) {
			return exitSkip
		}
		return 1
	}
	flags, err := unix.FcntlInt(uintptr(in.fd), unix.F_GETFD, 0)
	if err != nil {
		fmt.Println("listener fcntl:", err)
		return 1
	}
	fmt.Printf("listener=%d cloexec=%v killable=%v\n", in.fd, flags&unix.FD_CLOEXEC != 0, in.killable)
	// The confined goroutine now stops in connect (or in socket, if the
	// filter were wrong) and the listener turns readable. Should the call
	// return instead, it was never intercepted.
	select {
	case r := <-result:
		fmt.Println("not intercepted:", r)
		return 1
	case err := <-pollIn(in.fd):
		if err != nil {
			fmt.Println("poll:", err)
			return 1
		}
		fmt.Println("notified=true")
	}
	// Closing the listener (a dead supervisor) must fail the call, not
	// let it through.
	if err := unix.Close(in.fd); err != nil {
		fmt.Println("close:", err)
		return 1
	}
	fmt.Println(<-result)
	return 0
}

// pollIn waits until fd is readable.
func pollIn(fd int) <-chan error {
	done := make(chan error, 1)
	go func() {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(pfd, -1)
			if err != unix.EINTR {
				done <- err
				return
			}
		}
	}()
	return done
}
