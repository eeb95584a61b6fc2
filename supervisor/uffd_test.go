package supervisor_test

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The userfaultfd ABI (include/uapi/linux/userfaultfd.h): x/sys/unix has
// the syscall number only.
const (
	uffdAPI             = 0xaa
	uffdioAPI           = 0xc018aa3f // _IOWR(0xaa, 0x3f, struct uffdio_api)
	uffdioRegister      = 0xc020aa00 // _IOWR(0xaa, 0x00, struct uffdio_register)
	uffdRegisterMissing = 1
)

// uffdStall: one thread connects with its address on a page that no one
// will ever fill (registered with userfaultfd, missing-page mode), so
// the supervisor's read of the address waits for good; another thread's
// connect to allowed must still be answered. It prints that connect's
// result, or "no-uffd:ERRNO" when this process cannot stall a read made
// by another (userfaultfd refused, or limited to user-mode faults).
func uffdStall(allowed string) string {
	uffd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK, 0, 0)
	if e != 0 {
		return "no-uffd:" + result(e)
	}
	api := struct{ API, Features, Ioctls uint64 }{API: uffdAPI}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uffd, uffdioAPI, uintptr(unsafe.Pointer(&api))); e != 0 {
		return "no-uffd:" + result(e)
	}
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return "no-uffd:" + result(err)
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(page))) // never touched here
	reg := struct{ Start, Len, Mode, Ioctls uint64 }{Start: uint64(start), Len: uint64(len(page)), Mode: uffdRegisterMissing}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uffd, uffdioRegister, uintptr(unsafe.Pointer(&reg))); e != 0 {
		return "no-uffd:" + result(e)
	}
	stalled := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread stays in the call; the process exits around it
		stalled <- rawConnect(uint64(start), 16)
	}()
	// Long enough for the stalled connect to be received and its read to
	// start; the other connect comes either way.
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-stalled:
		return "not-stalled:" + result(err) // the read did not wait: nothing to test
	default:
	}
	return result(connectTo(allowed))
}

// TestStalledReadHoldsUpNoOther: a target can make the supervisor's read
// of its memory wait for good (an address on a userfaultfd page it never
// fills; a FUSE mapping it serves would do the same). That read must not
// hold up the other threads' calls: the notify loop's watchdog passes the
// turn on, and the read is made as a blocking syscall, so the Go runtime
// can stop the world around it (a raw syscall, which the runtime cannot
// preempt with the receiver's signals blocked, would have frozen the
// supervisor at its next garbage collection).
func TestStalledReadHoldsUpNoOther(t *testing.T) {
	skipUnderPtrace(t, "reads the tracees' memory on its tracer: a read that never returns holds up every tracee (docs/limits.md)")
	ok := listen(t, "127.0.0.1")
	cmd, report := supervisorCmd(t, "uffd-stall", ok.addr)
	// As root outside a user namespace: userfaultfd may then stall the
	// faults of another process's reads. Garbage collected every
	// millisecond: a stop of the world that waited for the stalled
	// receiver would freeze the supervisor, and the victim with it.
	cmd.Env = append(cmd.Env, usernsEnv+"=off", gcEnv+"=1")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the supervisor froze while a read of the target's memory was stalled")
	}
	if err != nil {
		t.Fatalf("supervisor role: %v\n%s", err, out)
	}
	words := strings.Fields(string(out))
	if len(words) == 1 && (strings.HasPrefix(words[0], "no-uffd:") || strings.HasPrefix(words[0], "not-stalled:")) {
		why := "this process cannot stall another's read of its memory with userfaultfd: " + words[0]
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	readReport(t, report)
	expect(t, words, "ok")
	if c, _ := ok.counts(t, 1, 0); c != 1 {
		t.Errorf("allowed listener saw %d connections, want 1", c)
	}
}
