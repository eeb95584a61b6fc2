package rawsock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Msg is one message to send: checked name and control, payload.
type Msg struct {
	Name, Control, Payload []byte
}

// The raw socket calls of an emulated call (supervisor/emusock.go): they take the
// checked sockaddr and control bytes as they are, whatever the family,
// which x/sys/unix's typed wrappers cannot.

func bytePtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// The emulated call's quick questions (pidfd_getfd, F_GETFL, SO_TYPE,
// SO_DOMAIN, SO_SNDTIMEO) never block: they are made raw, without the Go
// scheduler's entry and exit, and without x/sys/unix's allocation of the
// option's value.

// PidfdGetfd is pidfd_getfd(2) without flags (the copy is close-on-exec).
func PidfdGetfd(pidfd, target int) (int, unix.Errno) {
	fd, _, e := unix.RawSyscall(unix.SYS_PIDFD_GETFD, uintptr(pidfd), uintptr(target), 0)
	return int(fd), e
}

// FileFlags is fcntl(F_GETFL).
func FileFlags(fd int) (int, unix.Errno) {
	fl, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_GETFL, 0)
	return int(fl), e
}

// SockoptInt reads an int option of level SOL_SOCKET (SO_TYPE,
// SO_DOMAIN).
func SockoptInt(fd, opt int) (int, unix.Errno) {
	var v int32
	n := uint32(unsafe.Sizeof(v))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, uintptr(opt),
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	return int(v), e
}

// Setsockopt sets an option with a value of ours (supervisor/emuopt.go); optlen
// is passed as the target gave it, up to len(val).
func Setsockopt(fd, level, name int, val []byte, optlen int32) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(bytePtr(val)), uintptr(optlen), 0)
	return e
}

// SendTimeout returns whether SO_SNDTIMEO is set on fd.
func SendTimeout(fd int) (bool, unix.Errno) {
	var tv unix.Timeval
	n := uint32(unsafe.Sizeof(tv))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO,
		uintptr(unsafe.Pointer(&tv)), uintptr(unsafe.Pointer(&n)), 0)
	return tv.Sec != 0 || tv.Usec != 0, e
}

// Connect is connect(2) with the address bytes as they are.
func Connect(fd int, name []byte) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(bytePtr(name)), uintptr(len(name)))
	return e
}

// kernelMsg is a msghdr of ours for one outMsg, with its one iovec.
type kernelMsg struct {
	hdr unix.Msghdr
	iov unix.Iovec
}

func (k *kernelMsg) fill(m *Msg) {
	k.hdr = msghdrOf(m, &k.iov)
}

// msghdrOf is the msghdr of m, whose one iovec it fills in iov. (It
// returns the header rather than filling a kernelMsg on the stack: a
// local that points into itself is moved to the heap.)
func msghdrOf(m *Msg, iov *unix.Iovec) (h unix.Msghdr) {
	h.Name = (*byte)(bytePtr(m.Name))
	h.Namelen = uint32(len(m.Name))
	if len(m.Payload) > 0 {
		iov.Base = &m.Payload[0]
		iov.SetLen(len(m.Payload))
		h.Iov = iov
		h.SetIovlen(1)
	}
	if len(m.Control) > 0 {
		h.Control = &m.Control[0]
		h.SetControllen(len(m.Control))
	}
	return h
}

// Sendmsg sends m in one sendmsg.
func Sendmsg(fd int, m *Msg, flags int) (int, unix.Errno) {
	var iov unix.Iovec
	h := msghdrOf(m, &iov)
	n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&h)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// mmsghdr is struct mmsghdr, of sizeofMmsghdr bytes on 64-bit ABIs.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   uint32
}

const sizeofMmsghdr = 64

var _ [sizeofMmsghdr - unsafe.Sizeof(mmsghdr{})]struct{}

// Sendmmsg sends msgs in one sendmmsg and returns the count sent and
// each message's length as the kernel wrote it.
func Sendmmsg(fd int, msgs []Msg, flags int) (int, []uint32, unix.Errno) {
	hdrs := make([]mmsghdr, len(msgs))
	iovs := make([]kernelMsg, len(msgs))
	for i := range msgs {
		iovs[i].fill(&msgs[i])
		hdrs[i].hdr = iovs[i].hdr
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, nil, e
	}
	lens := make([]uint32, len(hdrs))
	for i := range hdrs {
		lens[i] = hdrs[i].len
	}
	return int(n), lens, 0
}
