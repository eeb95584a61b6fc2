package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// errFault stands for every way target memory can fail to be read: an
// unmapped pointer, a short read, a task that is gone. The call is then
// answered with EFAULT, as the kernel would, and never let through.
var errFault = errors.New("target memory unreadable")

// memReader reads a stopped target's memory through /proc/TID/mem.
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
type memReader struct {
	tid uint32
	fd  int // -1 until the first read
	vm  *atomic.Bool
	// prefetch: the call may be emulated, so a sendto's payload is read
	// with its address (readSendTo).
	prefetch bool
}

func newMemReader(tid uint32) *memReader { return &memReader{tid: tid, fd: -1} }

// useVM makes m read with process_vm_readv while vm holds; vm is cleared
// (for every later reader) the first time the kernel or a seccomp profile
// refuses it.
func (m *memReader) useVM(vm *atomic.Bool) *memReader {
	m.vm = vm
	return m
}

func (m *memReader) open() error {
	path := procfs.TaskPath(int(m.tid), "mem")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errFault, &os.PathError{Op: "open", Path: path, Err: err})
	}
	m.fd = fd
	return nil
}

func (m *memReader) Close() error {
	if m.fd < 0 {
		return nil
	}
	return unix.Close(m.fd)
}

// read fills buf from address addr, all of it or errFault.
func (m *memReader) read(addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if !plausible(addr, len(buf)) {
		return errFault
	}
	if m.vm != nil && m.vm.Load() {
		local := []unix.Iovec{{Base: &buf[0]}}
		local[0].SetLen(len(buf))
		n, err := processVMReadv(int(m.tid), local, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}})
		switch {
		case err == unix.EPERM || err == unix.ENOSYS:
			m.vm.Store(false) // refused here: /proc/TID/mem from now on
		case err != nil:
			return fmt.Errorf("%w: %w", errFault, os.NewSyscallError("process_vm_readv", err))
		case n != len(buf):
			return errFault
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
		return fmt.Errorf("%w: %w", errFault, err)
	}
	if n != len(buf) {
		return errFault
	}
	return nil
}

// readPair fills a from aAddr and b from bAddr in one process_vm_readv,
// and tells whether both were read whole. It reads nothing where
// process_vm_readv is not used: the caller then reads each on its own,
// which is also how any failure is told apart and reported.
func (m *memReader) readPair(aAddr uint64, a []byte, bAddr uint64, b []byte) bool {
	if m.vm == nil || !m.vm.Load() || len(a) == 0 || len(b) == 0 || !plausible(aAddr, len(a)) || !plausible(bAddr, len(b)) {
		return false
	}
	local := []unix.Iovec{{Base: &a[0]}, {Base: &b[0]}}
	local[0].SetLen(len(a))
	local[1].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(aAddr), Len: len(a)}, {Base: uintptr(bAddr), Len: len(b)}}
	n, err := processVMReadv(int(m.tid), local, remote)
	return err == nil && n == len(a)+len(b)
}

// plausible: n bytes at addr lie in the lower half of the address space.
func plausible(addr uint64, n int) bool {
	return addr != 0 && addr+uint64(n) >= addr && addr <= 1<<63-1
}

// msghdr is the part of struct msghdr (64-bit) that decides where a
// message goes: msg_name and msg_namelen, and the control messages, which
// can carry a source route.
type msghdr struct {
	name       uint64
	namelen    int32
	iov        uint64 // kept for an emulated send's payload
	iovlen     uint64
	control    uint64
	controllen uint64
}

const (
	sizeofMsghdr          = 56 // struct msghdr on 64-bit ABIs
	sizeofMmsghdr         = 64 // struct mmsghdr: msghdr + unsigned msg_len + padding
	sizeofSockaddrStorage = 128
	sizeofSockaddrNetlink = 12   // struct sockaddr_nl
	uioMaxIOV             = 1024 // UIO_MAXIOV: the kernel clamps sendmmsg's vlen to it
)

func parseMsghdr(b []byte) msghdr {
	return msghdr{
		name:       binary.NativeEndian.Uint64(b[0:8]),
		namelen:    int32(binary.NativeEndian.Uint32(b[8:12])),
		iov:        binary.NativeEndian.Uint64(b[16:24]),
		iovlen:     binary.NativeEndian.Uint64(b[24:32]),
		control:    binary.NativeEndian.Uint64(b[32:40]),
		controllen: binary.NativeEndian.Uint64(b[40:48]),
	}
}
