package supervisor_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// parentListenerEnv, in the supervisor role, names the syscalls a
// listener filter installed above the supervisor traps (as WSL2's init
// does for bind and listen): "bind,listen", "connect,sendto,sendmsg", or
// "pidfd_getfd" (answered slowly at times, as a nettrap above does); a
// name "i386:connect" traps the i386 ABI's call alone. The native names
// are compared with nr alone, arch unchecked, as WSL2's filter does.
// The role installs it on all its threads, answers CONTINUE to every
// notification, then starts the supervisor, whose notify engine then
// gets EBUSY.
const parentListenerEnv = "NETTRAP_SUPERVISOR_TEST_PARENT_LISTENER"

var parentListenerNrs = map[string]uint32{
	"bind": unix.SYS_BIND, "listen": unix.SYS_LISTEN, "connect": unix.SYS_CONNECT,
	"sendto": unix.SYS_SENDTO, "sendmsg": unix.SYS_SENDMSG, "pidfd_getfd": unix.SYS_PIDFD_GETFD,
}

// installParentListener installs the listener filter and serves it.
func installParentListener(names string) error {
	var prog []unix.SockFilter
	load := unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}
	prog = append(prog, load)
	for _, n := range strings.Split(names, ",") {
		if n == "i386:connect" {
			// if arch == i386 && nr == 362: USER_NOTIF; A is nr again after
			prog = append(prog,
				unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
				unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_I386, Jt: 0, Jf: 4},
				load,
				unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 362, Jt: 1, Jf: 0},
				unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA, K: 1},
				unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
				load)
			continue
		}
		nr, ok := parentListenerNrs[n]
		if !ok {
			return fmt.Errorf("parent listener: unknown syscall %q", n)
		}
		// if nr == this: return USER_NOTIF (the next instruction)
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: 0, Jf: 1},
			unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF})
	}
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW})
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("parent listener: %w", errno)
	}
	go serveParentListener(int(fd))
	return nil
}

// seccompNotif and seccompNotifResp are the kernel's structs, for the
// parent listener's own loop (the supervisor's are unexported).
type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

var parentNotifications int

func serveParentListener(fd int) {
	runtime.LockOSThread()
	for {
		var n seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); errno != 0 {
			if errors.Is(errno, unix.EINTR) || errors.Is(errno, unix.ENOENT) {
				continue
			}
			fmt.Fprintln(os.Stderr, "parent listener: recv:", errno)
			return
		}
		parentNotifications++
		if n.Nr == unix.SYS_PIDFD_GETFD && parentNotifications%2 == 0 {
			// Slow at times, as a nettrap above deciding it is: a signal
			// sent meanwhile interrupts the call (ERESTARTSYS), and the
			// restarted one is answered at once (or again slowly).
			time.Sleep(time.Millisecond)
		}
		r := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
	}
}
