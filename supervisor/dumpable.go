package supervisor

import "golang.org/x/sys/unix"

// setNotDumpable makes this process non-dumpable before any confined
// process exists. A confined process of the same user could otherwise
// open the supervisor's /proc/PID/mem (and write code into it) or
// /proc/PID/fd/* (and take the listener, answering its own calls): both
// need ptrace access, which the kernel refuses to a non-dumpable target
// without CAP_SYS_PTRACE. Reading the targets' memory is unaffected: that
// checks the target's dumpability, not ours. (The targets' exec resets
// their own flag.)
//
// A supervisor nested in another one's confinement is non-dumpable too, so
// the outer one cannot read its memory unless root: its own trapped calls
// that need a look at memory (a connect, a send) then fail with EFAULT.
// nettrap makes none of those itself once the command runs; the calls
// that need no look (pidfd_getfd of its child's socket, …) are decided
// without opening its memory (see targetmem.Reader).
func setNotDumpable() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
