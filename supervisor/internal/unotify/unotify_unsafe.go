package unotify

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user-notification ABI (include/uapi/linux/seccomp.h).
// golang.org/x/sys/unix has the constants and ioctl numbers but not the
// structs, so those are written out here.

// Data is struct seccomp_data.
type Data struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// Notif is struct seccomp_notif (80 bytes).
type Notif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  Data
}

// Resp is struct seccomp_notif_resp (24 bytes).
type Resp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Addfd is struct seccomp_notif_addfd (24 bytes).
type Addfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// Compile-time checks that the layouts match the kernel's.
var (
	_ [24 - unsafe.Sizeof(Addfd{})]struct{}
	_ [unsafe.Sizeof(Addfd{}) - 24]struct{}
	_ [80 - unsafe.Sizeof(Notif{})]struct{}
	_ [unsafe.Sizeof(Notif{}) - 80]struct{}
	_ [24 - unsafe.Sizeof(Resp{})]struct{}
	_ [unsafe.Sizeof(Resp{}) - 24]struct{}
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

// Recv blocks until the kernel hands over one notification. The
// struct must be zeroed before the call (the kernel rejects garbage).
func Recv(fd int, n *Notif) error {
	*n = Notif{}
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// Send answers one notification. ENOENT means the target is gone or
// its syscall was interrupted: the caller treats it as normal.
func Send(fd int, r *Resp) error {
	return ioctlPtrRaw(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r))
}

// AddFD installs a copy of srcfd in the target of notification a.ID
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
func AddFD(fd int, a *Addfd) (int, error) {
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

// IDValid reports whether the notification is still pending, i.e. the
// task that raised it still waits in that very syscall. It must be asked
// after reading target memory: if the task died and its pid was reused,
// what was read belongs to somebody else.
// x/sys has the _IOW form of SECCOMP_IOCTL_NOTIF_ID_VALID; kernels
// before 5.10 knew only _IOR, and accept both since.
func IDValid(fd int, id uint64) bool {
	return ioctlPtrRaw(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// SetSyncWakeUp asks the kernel (6.6+) to wake the supervisor on the
// target's CPU, which cuts the round trip. Unsupported is not an error.
func SetSyncWakeUp(fd int) bool {
	// The flags travel as the ioctl argument itself, not behind a pointer.
	// SECCOMP_IOCTL_NOTIF_SET_FLAGS is 6.6+.
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	return e == 0
}

// AddfdSendKnown tells whether the kernel knows SECCOMP_ADDFD_FLAG_SEND
// (5.14+), asked on listener fd with no notification: it checks the
// flags (EINVAL for one unknown, and for the whole ioctl before 5.9)
// before it looks the source descriptor up (EBADF for -1).
func AddfdSendKnown(fd int) bool {
	a := Addfd{Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: ^uint32(0)}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
	return e == unix.EBADF
}
