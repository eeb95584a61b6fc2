package main

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// notif is struct seccomp_notif, resp struct seccomp_notif_resp.
type notif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type resp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

var nativeEndianBig = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 0 }()

// installFilter installs prog on the calling thread with a listener,
// killable once received where the kernel can (5.19+), as cfloor does.
func installFilter(prog []unix.SockFilter) (int, error) {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	for {
		fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fp)))
		if e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
			continue
		}
		if e != 0 {
			return -1, os.NewSyscallError("seccomp", e)
		}
		return int(fd), nil
	}
}

func (r *receiver) notifPtr() uintptr { return uintptr(unsafe.Pointer(&r.n)) }

// send answers with r.resp; a target that left the call is normal.
func (r *receiver) send() {
	unix.RawSyscall(unix.SYS_IOCTL, uintptr(r.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r.resp)))
}

func (r *receiver) idValid() bool {
	id := r.n.ID
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(r.listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// read reads len(buf) bytes at addr in the caller (not raw: the target
// chooses the pages, and may make the read wait).
func (r *receiver) read(buf []byte, addr uint64) bool {
	if len(buf) == 0 {
		return true
	}
	local := unix.Iovec{Base: &buf[0]}
	local.SetLen(len(buf))
	remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(buf)}
	n, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(r.n.PID), uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&remote)), 1, 0)
	return e == 0 && int(n) == len(buf)
}

// readv gathers the caller's iovecs riov into r.payload.
func (r *receiver) readv(riov []unix.RemoteIovec, n int) bool {
	if n == 0 {
		return true
	}
	local := unix.Iovec{Base: &r.payload[0]}
	local.SetLen(n)
	_, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(r.n.PID), uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&riov[0])), uintptr(len(riov)), 0)
	return e == 0
}

func (r *receiver) pidfdGetfd(pidfd int, fd int) (int, unix.Errno) {
	nfd, _, e := unix.RawSyscall(unix.SYS_PIDFD_GETFD, uintptr(pidfd), uintptr(fd), 0)
	return int(nfd), e
}

func (r *receiver) connect(fd int, name []byte) (int64, unix.Errno) {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)))
	return 0, e
}

func (r *receiver) sendto(fd int, payload, name []byte, flags int) (int64, unix.Errno) {
	var p unsafe.Pointer
	if len(payload) > 0 {
		p = unsafe.Pointer(&payload[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(len(payload)), uintptr(flags|unix.MSG_NOSIGNAL),
		uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)))
	return int64(n), e
}

func (r *receiver) sendmsg(fd int, h *unix.Msghdr, flags int) (int64, unix.Errno) {
	n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags|unix.MSG_NOSIGNAL))
	return int64(n), e
}

// sendmsgOf sends one message of ours: name, the gathered payload and
// control data.
func (r *receiver) sendmsgOf(fd int, name, payload, control []byte, flags int) (int64, unix.Errno) {
	var h unix.Msghdr
	var iov unix.Iovec
	if len(name) > 0 {
		h.Name, h.Namelen = &name[0], uint32(len(name))
	}
	if len(payload) > 0 {
		iov.Base = &payload[0]
		iov.SetLen(len(payload))
		h.Iov = &iov
		h.SetIovlen(1)
	}
	if len(control) > 0 {
		h.Control = &control[0]
		h.SetControllen(len(control))
	}
	return r.sendmsg(fd, &h, flags)
}
