package supervisor

import (
	"encoding/binary"
	"runtime"

	xbpf "golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The receivers (receiver.go) block in SECCOMP_IOCTL_NOTIF_RECV, and
// nothing but a notification wakes that call for sure: closing the
// listener does not (the ioctl holds the file), a signal to the thread
// restarts it (6.6+ returns -ERESTARTSYS from the wait, and every Go
// handler has SA_RESTART), and the wake-up the kernel gives when the
// filter's last user is gone (6.6+: RECV then fails with ENOENT) does not
// come while a stray descendant of the command still runs. So to stop
// them the supervisor raises notifications of its own: the thread that
// installed the filter carries it, and once the command is reaped it
// makes a call the filter traps, connect(-1, NULL, 0), once per receiver
// still running; a stopping receiver answers it ENOSYS and ends.

// kickCall is the trapped call: its fd is -1, so should it ever reach the
// kernel it fails with EBADF and touches nothing.
var kickArgs = [6]uint64{^uint64(0), 0, 0}

// kickable tells whether prog hands the kick call to the supervisor, by
// running it in a BPF interpreter. Where it does not (a custom program),
// the loop polls before each RECV instead (see loop.serve).
func kickable(prog []unix.SockFilter) bool {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return false
	}
	raw := make([]xbpf.RawInstruction, len(prog))
	for i, f := range prog {
		raw[i] = xbpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	insns, ok := xbpf.Disassemble(raw)
	if !ok {
		return false
	}
	vm, err := xbpf.NewVM(insns)
	if err != nil {
		return false
	}
	r, err := vm.Run(vmSeccompData(unix.SYS_CONNECT, arch, kickArgs))
	return err == nil && uint32(r)&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_USER_NOTIF
}

// vmSeccompData lays out struct seccomp_data for x/net/bpf's VM, which
// reads every 32-bit word big-endian where the kernel reads it in native
// (little-endian) order: each word is written big-endian, low half of a
// u64 first, so that the VM loads the values the kernel would.
func vmSeccompData(nr int, arch uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(nr))
	be.PutUint32(b[4:], arch)
	for i, a := range args {
		be.PutUint32(b[16+8*i:], uint32(a))
		be.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// kick wakes the receivers of a stopping loop; it runs on the thread
// that carries the filter. Each trapped call is answered ENOSYS by a
// receiver that then ends (it leaves the count before answering, so the
// count read after the answer is exact). Any other result means the call
// was not trapped after all: the receivers then end when the filter's
// last user is gone. A kick that finds no receiver left (one ended on its
// own in between) is answered by the kernel when the listener is closed.
func (l *loop) kick() {
	if !l.blocking {
		return
	}
	for l.recv.alive.Load() > 0 {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(kickArgs[0]), 0, 0)
		if e != unix.ENOSYS {
			return
		}
	}
}
