package ptrace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// Under the notify engine a netlink socket(2) made in the starting
// namespace is answered with a socket made on the capability-free thread
// (SECCOMP_ADDFD_FLAG_SEND; see supervisor/internal/notify/netlink.go), so that the kernel refuses
// every change written through it, even with plain write(2). The ptrace
// engine has no listener to add a descriptor through, so it makes the
// stopped thread take the socket itself: it turns the stopped call into
// pidfd_open(nettrap), then, rewinding the thread onto its syscall
// instruction after each, into pidfd_getfd(that pidfd, the socket),
// close(that pidfd) and, without SOCK_CLOEXEC, fcntl(F_SETFD, 0); then
// it restores the registers with the new descriptor as socket(2)'s
// result. Every argument is a register: nothing is written to the
// thread's memory. Only a thread that may hold CAP_NET_ADMIN needs this
// (without it the kernel refuses changes anyway), so others make their
// socket as they asked.

// handOver is one hand-over in progress, for one stopped thread.
type handOver struct {
	regs    unix.PtraceRegs // at the socket(2) stop
	fd      int             // the capability-free socket, in nettrap
	cloexec bool
	step    handOverStep
	pidfd   int64 // in the thread, once opened
	newfd   int64 // in the thread, once taken
	atEntry bool
	// nr is the call made now, and entered tells that the thread is in
	// it: stops of other calls come between (a signal handler's, Go's
	// SIGURG preemption runs one at any time), and are not the step's.
	nr, a0, a1, a2 uint64
	entered        bool
}

type handOverStep int

const (
	stepPidfdOpen handOverStep = iota
	stepGetfd
	stepClosePidfd
	stepCloexec
)

// mayAdminNet tells whether thread tid may hold CAP_NET_ADMIN over the
// starting namespace (in its permitted set: it could raise it later);
// yes when it cannot be told. A thread in a user namespace other than
// nettrap's (the command's own, supervisor/userns.go) holds its capabilities only
// there, never over the starting namespace; it could not take the socket
// either (pidfd_getfd on nettrap needs ptrace rights over it).
func mayAdminNet(tid int) bool {
	if inOtherUserns(tid) {
		return false
	}
	has, err := procfs.HasCapability(procfs.TaskPath(tid, "status"), "CapPrm", unix.CAP_NET_ADMIN)
	return err != nil || has
}

// ownerAbove tells whether the network namespace nsfd names belongs to a
// user namespace above nettrap's (NS_GET_USERNS says EPERM for an owner
// outside the caller's): as under a nettrap that runs its command in a
// user namespace of its own. No confined thread can then hold a
// capability over it (none can enter a user namespace above), so none
// needs a socket handed over; and the nettrap above would refuse the
// hand-over's pidfd_getfd, which takes from an ancestor. Other errors
// (old kernels) say no: hand over.
func ownerAbove(nsfd int) bool {
	if nsfd < 0 {
		return false
	}
	u, err := unix.IoctlRetInt(nsfd, unix.NS_GET_USERNS)
	if err == nil {
		unix.Close(u)
	}
	return errors.Is(err, unix.EPERM)
}

// inOtherUserns tells whether thread tid is in another user namespace than
// nettrap; no when it cannot be told.
func inOtherUserns(tid int) bool {
	theirs, err := procfs.Namespace(procfs.TaskPath(tid, "ns/user"))
	if err != nil {
		return false
	}
	var ours procfs.NsID
	plainthread.Run(func() { ours, err = procfs.Namespace(procfs.ThreadSelfPath("ns/user")) })
	return err == nil && theirs != ours
}

// startHandOver begins the hand-over of a capability-free netlink socket
// to the thread stopped in c, a native socket(AF_NETLINK, …). It returns
// false, having done nothing, where it cannot: the call then runs as
// asked.
func (tr *Tracer) startHandOver(c *emulate.Call, atEntry bool) bool {
	if tr.capMaker == nil || tr.noHandOver || !mayAdminNet(c.TID) ||
		!procfs.SamePIDNamespace(c.TID) {
		return false
	}
	typ := int(int32(c.Args[1]))
	fd, err := tr.capMaker.NetlinkSocket(typ, int(int32(c.Args[2])))
	if err != nil {
		tr.skip(c.TID, -int64(emulate.ErrnoOf(err)), atEntry) // the kernel's own answer
		return true
	}
	h := &handOver{fd: fd, cloexec: typ&unix.SOCK_CLOEXEC != 0, atEntry: atEntry}
	if err := tracee.GetRegs(c.TID, &h.regs); err != nil {
		unix.Close(fd)
		return false
	}
	r := h.regs
	if err := tracee.ReplaceCall(c.TID, &r, unix.SYS_PIDFD_OPEN, uint64(unix.Getpid()), 0, 0); err != nil {
		unix.Close(fd)
		return false
	}
	h.nr, h.a0, h.entered = unix.SYS_PIDFD_OPEN, uint64(unix.Getpid()), true // the stopped call is it now
	tr.handOvers[c.TID] = h
	tr.ptraceOK(c.TID, unix.PtraceSyscall(c.TID, 0))
	return true
}

// handOverStop handles a syscall or seccomp stop of a thread whose
// hand-over is under way. The stops of the call made now move the
// hand-over on (its entry, and the seccomp stop of pidfd_getfd, which
// nettrap's own filter traps, just go on; its exit carries the result);
// any other call's (a signal handler's) is handled as usual. It returns
// false for those.
func (tr *Tracer) handOverStop(pid int, h *handOver) bool {
	var info tracee.SyscallInfo
	if err := tracee.GetSyscallInfo(pid, &info); err != nil {
		tr.endHandOver(pid, h)
		return true
	}
	switch {
	case info.Op != tracee.InfoExit && !h.entered && info.Nr == h.nr && info.Args[0] == h.a0:
		h.entered = true
		fallthrough
	case info.Op == tracee.InfoSeccomp && h.entered && info.Nr == h.nr:
		tr.ptraceOK(pid, unix.PtraceSyscall(pid, 0))
		return true
	case info.Op != tracee.InfoExit || !h.entered:
		return false
	}
	h.entered = false
	ret := int64(info.Nr) // the exit's rval
	var err error
	if restarting(ret) {
		// A signal came while the call waited (for a seccomp listener
		// above that traps it, say: an enclosing nettrap deciding the
		// pidfd_getfd): the kernel would make the call again after the
		// handler, or fail it with EINTR without SA_RESTART. Making it
		// again is the hand-over's own: the thread resumes on its
		// syscall instruction, the handler runs first.
		err = tr.rewind(pid, h, h.nr, h.a0, h.a1, h.a2)
	} else {
		err = tr.nextStep(pid, h, ret)
	}
	if err != nil {
		tr.report(fmt.Errorf("hand a netlink socket to tracee %d: %w; killing it", pid, err))
		unix.Kill(pid, unix.SIGKILL)
		tr.endHandOver(pid, h)
	}
	return true
}

// restarting tells a syscall's result that the kernel turns into a
// restart or EINTR on the way out (ERESTARTSYS, ERESTARTNOINTR,
// ERESTARTNOHAND, ERESTART_RESTARTBLOCK): a tracer sees it at the exit
// stop, before the signal is handled.
func restarting(ret int64) bool {
	switch ret {
	case -512, -513, -514, -516:
		return true
	}
	return false
}

// nextStep moves the hand-over on from the exit of its call, which
// returned ret.
func (tr *Tracer) nextStep(pid int, h *handOver, ret int64) error {
	var err error
	switch h.step {
	case stepPidfdOpen:
		if ret < 0 {
			tr.handOverFailed(pid, h, unix.Errno(-ret))
			return nil
		}
		h.pidfd, h.step = ret, stepGetfd
		err = tr.rewind(pid, h, unix.SYS_PIDFD_GETFD, uint64(h.pidfd), uint64(h.fd), 0)
	case stepGetfd:
		h.newfd, h.step = ret, stepClosePidfd
		err = tr.rewind(pid, h, unix.SYS_CLOSE, uint64(h.pidfd), 0, 0)
	case stepClosePidfd:
		if h.newfd < 0 {
			tr.handOverFailed(pid, h, unix.Errno(-h.newfd))
			return nil
		}
		if !h.cloexec {
			h.step = stepCloexec
			err = tr.rewind(pid, h, unix.SYS_FCNTL, uint64(h.newfd), unix.F_SETFD, 0)
			break
		}
		tr.finishHandOver(pid, h)
	case stepCloexec:
		tr.finishHandOver(pid, h)
	}
	return err
}

// rewind makes the thread, at an exit stop, make the call nr next: back
// onto its syscall instruction, with the call's registers.
func (tr *Tracer) rewind(pid int, h *handOver, nr, a0, a1, a2 uint64) error {
	h.nr, h.a0, h.a1, h.a2 = nr, a0, a1, a2
	r := h.regs
	tracee.SetCall(&r, nr, a0, a1, a2)
	tracee.RewindSyscall(&r)
	if err := tracee.SetRegs(pid, &r); err != nil {
		return err
	}
	return unix.PtraceSyscall(pid, 0)
}

// finishHandOver answers socket(2) with the new descriptor.
func (tr *Tracer) finishHandOver(pid int, h *handOver) {
	tr.endHandOver(pid, h)
	tr.stats.Allowed.Add(1)
	tr.stats.CaplessNetlink.Add(1)
	r := h.regs
	tracee.SetResult(&r, h.newfd)
	if err := tracee.SetRegs(pid, &r); err != nil {
		if !errors.Is(err, unix.ESRCH) {
			tr.report(fmt.Errorf("answer socket(2) of tracee %d: %w; killing it", pid, err))
			unix.Kill(pid, unix.SIGKILL)
		}
		return
	}
	tr.resume(pid, 0)
}

// handOverFailed gives up (pidfd_getfd refused: a container profile, a
// capability dropped): the thread's socket(2) runs as it asked, which
// is said once.
func (tr *Tracer) handOverFailed(pid int, h *handOver, errno unix.Errno) {
	tr.endHandOver(pid, h)
	tr.noHandOver = true
	tr.report(fmt.Errorf("cannot hand netlink sockets over under the ptrace engine (%v): "+
		"the confined processes' own netlink sockets keep their capabilities", errno))
	r := h.regs
	tracee.RewindSyscall(&r) // socket(2) again, let run this time
	tr.plainOnce[pid] = true
	if err := tracee.SetRegs(pid, &r); err == nil {
		tr.resume(pid, 0)
	}
}

func (tr *Tracer) endHandOver(pid int, h *handOver) {
	delete(tr.handOvers, pid)
	unix.Close(h.fd)
}
