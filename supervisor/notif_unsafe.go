package supervisor

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user-notification ABI (include/uapi/linux/seccomp.h).
// golang.org/x/sys/unix has the constants and ioctl numbers but not the
// structs, so those are written out here.

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// notif is struct seccomp_notif (80 bytes).
type notif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp (24 bytes).
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifAddfd is struct seccomp_notif_addfd (24 bytes).
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// Compile-time checks that the layouts match the kernel's.
var (
	_ [24 - unsafe.Sizeof(notifAddfd{})]struct{}
	_ [unsafe.Sizeof(notifAddfd{}) - 24]struct{}
	_ [80 - unsafe.Sizeof(notif{})]struct{}
	_ [unsafe.Sizeof(notif{}) - 80]struct{}
	_ [24 - unsafe.Sizeof(notifResp{})]struct{}
	_ [unsafe.Sizeof(notifResp{}) - 24]struct{}
)

func ioctlPtr(fd int, req uintptr, p unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	if e != 0 {
		return e
	}
	return nil
}

// ioctlPtrRaw is ioctlPtr for the requests that never wait (SEND,
// ID_VALID): a raw syscall does not tell the Go scheduler, which saves the
// two scheduler calls around each of the several syscalls an answer takes
// while the target waits.
func ioctlPtrRaw(fd int, req uintptr, p unsafe.Pointer) error {
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(p))
	if e != 0 {
		return e
	}
	return nil
}

// recvNotif blocks until the kernel hands over one notification. The
// struct must be zeroed before the call (the kernel rejects garbage).
func recvNotif(fd int, n *notif) error {
	*n = notif{}
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// sendResp answers one notification. ENOENT means the target is gone or
// its syscall was interrupted: the caller treats it as normal.
func sendResp(fd int, r *notifResp) error {
	return ioctlPtrRaw(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r))
}

// addFD installs a copy of srcfd in the target of notification a.ID
// (SECCOMP_IOCTL_NOTIF_ADDFD, 5.9+) and returns its number there. With
// SECCOMP_ADDFD_FLAG_SEND (5.14+) the same step answers the notification:
// the target's syscall returns that number.
//
// With SEND, no signal may interrupt the ioctl: it marks the notification
// answered before it waits for the target to take the descriptor, and a
// signal in that wait withdraws the descriptor but not the answer, so the
// target's call returns 0 (its stdin for the socket it asked for) and the
// ioctl, restarted, says EINPROGRESS (kernel/seccomp.c,
// seccomp_notify_addfd). So the thread blocks every signal it can for
// the call; they are delivered after.
func addFD(fd int, a *notifAddfd) (int, error) {
	if a.Flags&unix.SECCOMP_ADDFD_FLAG_SEND != 0 {
		runtime.LockOSThread() // the mask is the thread's
		defer runtime.UnlockOSThread()
		all := unix.Sigset_t{}
		for i := range all.Val {
			all.Val[i] = ^all.Val[i]
		}
		var old unix.Sigset_t
		if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
			return -1, fmt.Errorf("block signals for SECCOMP_IOCTL_NOTIF_ADDFD: %w", err)
		}
		defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	}
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(a)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// idValid reports whether the notification is still pending, i.e. the
// task that raised it still waits in that very syscall. It must be asked
// after reading target memory: if the task died and its pid was reused,
// what was read belongs to somebody else.
// x/sys has the _IOW form of SECCOMP_IOCTL_NOTIF_ID_VALID; kernels
// before 5.10 knew only _IOR, and accept both since.
func idValid(fd int, id uint64) bool {
	return ioctlPtrRaw(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// setSyncWakeUp asks the kernel (6.6+) to wake the supervisor on the
// target's CPU, which cuts the round trip. Unsupported is not an error.
func setSyncWakeUp(fd int) bool {
	// The flags travel as the ioctl argument itself, not behind a pointer.
	// SECCOMP_IOCTL_NOTIF_SET_FLAGS is 6.6+.
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	return e == 0
}

// The raw socket calls of an emulated call (emusock.go): they take the
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

func rawPidfdGetfd(pidfd, target int) (int, unix.Errno) {
	fd, _, e := unix.RawSyscall(unix.SYS_PIDFD_GETFD, uintptr(pidfd), uintptr(target), 0)
	return int(fd), e
}

func rawFileFlags(fd int) (int, unix.Errno) {
	fl, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_GETFL, 0)
	return int(fl), e
}

// rawSockoptInt reads an int option of level SOL_SOCKET (SO_TYPE,
// SO_DOMAIN).
func rawSockoptInt(fd, opt int) (int, unix.Errno) {
	var v int32
	n := uint32(unsafe.Sizeof(v))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, uintptr(opt),
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	return int(v), e
}

// rawSetsockopt sets an option with a value of ours (emuopt.go); optlen
// is passed as the target gave it, up to len(val).
func rawSetsockopt(fd, level, name int, val []byte, optlen int32) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(bytePtr(val)), uintptr(optlen), 0)
	return e
}

// rawSendTimeout returns whether SO_SNDTIMEO is set on fd.
func rawSendTimeout(fd int) (bool, unix.Errno) {
	var tv unix.Timeval
	n := uint32(unsafe.Sizeof(tv))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO,
		uintptr(unsafe.Pointer(&tv)), uintptr(unsafe.Pointer(&n)), 0)
	return tv.Sec != 0 || tv.Usec != 0, e
}

func sysConnect(fd int, name []byte) unix.Errno {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(bytePtr(name)), uintptr(len(name)))
	return e
}

// kernelMsg is a msghdr of ours for one outMsg, with its one iovec.
type kernelMsg struct {
	hdr unix.Msghdr
	iov unix.Iovec
}

func (k *kernelMsg) fill(m *outMsg) {
	k.hdr.Name = (*byte)(bytePtr(m.name))
	k.hdr.Namelen = uint32(len(m.name))
	if len(m.payload) > 0 {
		k.iov.Base = &m.payload[0]
		k.iov.SetLen(len(m.payload))
		k.hdr.Iov = &k.iov
		k.hdr.SetIovlen(1)
	}
	if len(m.control) > 0 {
		k.hdr.Control = &m.control[0]
		k.hdr.SetControllen(len(m.control))
	}
}

func sysSendmsg(fd int, m *outMsg, flags int) (int, unix.Errno) {
	var k kernelMsg
	k.fill(m)
	n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&k.hdr)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// mmsghdr is struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   uint32
}

var _ [sizeofMmsghdr - unsafe.Sizeof(mmsghdr{})]struct{}

// sysSendmmsg sends msgs in one sendmmsg and returns the count sent and
// each message's length as the kernel wrote it.
func sysSendmmsg(fd int, msgs []outMsg, flags int) (int, []uint32, unix.Errno) {
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
