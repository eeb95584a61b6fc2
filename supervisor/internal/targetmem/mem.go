package targetmem

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// ErrFault stands for every way target memory can fail to be read: an
// unmapped pointer, a short read, a task that is gone. The call is then
// answered with EFAULT, as the kernel would, and never let through.
var ErrFault = errors.New("target memory unreadable")

// Reader reads a stopped target's memory through /proc/TID/mem.
// pread on that file is allowed under Docker's and Podman's default seccomp
// profiles, where process_vm_readv is not always. The file is opened per
// notification, on the first read: a cached descriptor would outlive an
// exec or a pid reuse and read somebody else's address space, and a call
// that needs no look at memory (pidfd_getfd, io_uring_setup, socket) must
// not fail because the target's memory cannot be opened (a non-dumpable
// target, such as a nested supervisor).
//
// It holds a raw descriptor, not an *os.File: os.Open tries to register
// every file with the netpoller and Fd() puts it back in blocking mode,
// four extra syscalls on every trapped call while the target waits.
//
// Where process_vm_readv is allowed (vm set) it reads with that instead:
// one syscall per read, no open of /proc/TID/mem (a path walk and an
// access check that cost more than the read) per notification.
type Reader struct {
	tid uint32
	fd  int // -1 until the first read
	vm  *atomic.Bool
	// Prefetch: the call may be emulated, so a sendto's payload is read
	// with its address (supervisor's readSendTo).
	Prefetch bool
}

func NewReader(tid uint32) *Reader { return new(Reader).Reset(tid) }

// Reset makes m a new reader of task tid, in m's own storage (a call's,
// which the hot path allocates anyway), and returns m.
func (m *Reader) Reset(tid uint32) *Reader {
	*m = Reader{tid: tid, fd: -1}
	return m
}

// UseVM makes m read with process_vm_readv while vm holds; vm is cleared
// (for every later reader) the first time the kernel or a seccomp profile
// refuses it.
func (m *Reader) UseVM(vm *atomic.Bool) *Reader {
	m.vm = vm
	return m
}

func (m *Reader) open() error {
	path := procfs.TaskPath(int(m.tid), "mem")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFault, &os.PathError{Op: "open", Path: path, Err: err})
	}
	m.fd = fd
	return nil
}

func (m *Reader) Close() error {
	if m.fd < 0 {
		return nil
	}
	return unix.Close(m.fd)
}

// Read fills buf from address addr, all of it or ErrFault.
func (m *Reader) Read(addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if !plausible(addr, len(buf)) {
		return ErrFault
	}
	if m.vm != nil && m.vm.Load() {
		local := []unix.Iovec{{Base: &buf[0]}}
		local[0].SetLen(len(buf))
		n, err := ProcessVMReadv(int(m.tid), local, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}})
		switch {
		case err == unix.EPERM || err == unix.ENOSYS:
			m.vm.Store(false) // refused here: /proc/TID/mem from now on
		case err != nil:
			return fmt.Errorf("%w: %w", ErrFault, os.NewSyscallError("process_vm_readv", err))
		case n != len(buf):
			return ErrFault
		default:
			return nil
		}
	}
	if m.fd < 0 {
		if err := m.open(); err != nil {
			return err
		}
	}
	n, err := unix.Pread(m.fd, buf, int64(addr))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFault, err)
	}
	if n != len(buf) {
		return ErrFault
	}
	return nil
}

// Part is one buffer of a scattered read: Buf filled from Addr.
type Part struct {
	Addr uint64
	Buf  []byte
}

// maxScatter is the most parts ReadScatter takes.
const maxScatter = 4

// ReadScatter fills each part's buffer from its address in one
// process_vm_readv, and tells whether all were filled whole. It reads
// nothing where process_vm_readv is not used: the caller then reads each
// on its own, which is also how any failure is told apart and reported.
func (m *Reader) ReadScatter(parts []Part) bool {
	if len(parts) == 0 || len(parts) > maxScatter {
		return false
	}
	var local [maxScatter]unix.Iovec
	var remote [maxScatter]unix.RemoteIovec
	total := 0
	for i, p := range parts {
		if len(p.Buf) == 0 {
			return false
		}
		local[i] = unix.Iovec{Base: &p.Buf[0]}
		local[i].SetLen(len(p.Buf))
		remote[i] = unix.RemoteIovec{Base: uintptr(p.Addr), Len: len(p.Buf)}
		total += len(p.Buf)
	}
	return m.readWhole(local[:len(parts)], remote[:len(parts)], total)
}

// ReadGather fills buf from the target's buffers remote, in order, in one
// process_vm_readv, and tells whether buf was filled whole; like
// ReadScatter, it reads nothing where process_vm_readv is not used.
func (m *Reader) ReadGather(remote []unix.RemoteIovec, buf []byte) bool {
	if len(buf) == 0 {
		return false
	}
	local := [1]unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	return m.readWhole(local[:], remote, len(buf))
}

// readWhole is ReadScatter's and ReadGather's one process_vm_readv: it
// tells whether it read total bytes, every remote buffer plausible.
func (m *Reader) readWhole(local []unix.Iovec, remote []unix.RemoteIovec, total int) bool {
	if m.vm == nil || !m.vm.Load() || len(remote) == 0 {
		return false
	}
	for _, r := range remote {
		if !plausible(uint64(r.Base), r.Len) {
			return false
		}
	}
	n, err := ProcessVMReadv(int(m.tid), local, remote)
	return err == nil && n == total
}

// plausible: n bytes at addr lie in the lower half of the address space.
func plausible(addr uint64, n int) bool {
	return addr != 0 && addr+uint64(n) >= addr && addr <= 1<<63-1
}
