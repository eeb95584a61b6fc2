package supervisor

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
)

// seccompStop handles a stop of SECCOMP_RET_TRACE: the filter trapped
// the call, which has not run yet.
func (tr *tracer) seccompStop(pid int) {
	var info syscallInfo
	if !tr.syscallInfo(pid, &info) {
		return
	}
	if tr.entryDecided[pid] {
		// Decided at its entry stop (a listener above): this is the same
		// call, which the filter traps too.
		delete(tr.entryDecided, pid)
		tr.resume(pid, 0)
		return
	}
	tr.dispatch(pid, &info, false)
}

// syscallStop handles a syscall-entry or exit stop (a listener above).
// At entry the filter's program decides whether the call is one to
// decide; at exit a denial's errno is set again, since the kernel may
// have overwritten the return value of a skipped call on the way.
func (tr *tracer) syscallStop(pid int) {
	var info syscallInfo
	if !tr.syscallInfo(pid, &info) {
		return
	}
	switch info.Op {
	case syscallInfoEntry:
		act, err := tr.eval.Eval(info.Arch, int32(info.Nr), info.IP, info.Args)
		if err != nil {
			tr.report(err)
			tr.deny(pid, unix.ENOSYS, true) // fail closed
			return
		}
		if bpf.Traps(act) {
			tr.dispatch(pid, &info, true)
			return
		}
	case syscallInfoExit:
		if r, ok := tr.exitRet[pid]; ok {
			delete(tr.exitRet, pid)
			if err := setReturn(pid, r); err != nil && !errors.Is(err, unix.ESRCH) {
				tr.report(fmt.Errorf("set the return value of tracee %d: %w", pid, err))
			}
		}
	}
	tr.resume(pid, 0)
}

// syscallInfo reads the stopped call. A tracee it cannot read is denied
// (its call must not run unread), or gone.
func (tr *tracer) syscallInfo(pid int, info *syscallInfo) bool {
	err := getSyscallInfo(pid, info)
	if err == nil {
		return true
	}
	if !errors.Is(err, unix.ESRCH) {
		tr.report(fmt.Errorf("read the call of tracee %d: %w", pid, err))
		tr.deny(pid, unix.ENOSYS, false)
	}
	return false
}

// dispatch decides the call on another goroutine (see tracer).
func (tr *tracer) dispatch(pid int, info *syscallInfo, atEntry bool) {
	tr.stats.Notifications.Add(1)
	c := tr.newCall(pid, info)
	if pid == tr.main && !tr.execed && c.Syscall.Kind == bpf.Execve && !c.Syscall.Foreign {
		// The stub's exec of the command (a filter that traps execve).
		tr.apply(traceAnswer{tid: pid, a: Answer{Allow: true}, atEntry: atEntry})
		return
	}
	tr.inflight.Add(1)
	go func() {
		defer tr.inflight.Done()
		tr.post(traceAnswer{tid: pid, a: tr.decide(c), atEntry: atEntry})
	}()
}

// newCall is the call a stop reports, with the supervisor's Task.
func (tr *tracer) newCall(pid int, info *syscallInfo) *Call {
	c := &Call{
		ID:       tr.ids.Add(1),
		TID:      pid,
		Syscall:  bpf.Lookup(info.Arch, int32(info.Nr)),
		Args:     info.Args,
		listener: -1,
		traced:   true,
		netns:    tr.netns,
	}
	c.task.c = c
	c.Task = &c.task
	return c
}

// decide reads the call's arguments from the stopped tracee and asks the
// decider. The tracee stays stopped meanwhile: what is read is what the
// kernel will read, unless another thread changes it first (the race
// emulation closes under the notify engine; see README).
func (tr *tracer) decide(c *Call) Answer {
	if !c.Syscall.Foreign {
		m := newMemReader(uint32(c.TID)).useVM(&tr.vmRead)
		c.Dests, c.Err = readDests(m, c)
		m.Close()
	}
	defer c.release()
	c.decode()
	return decideWith(tr.decider, tr.report, c)
}

// apply carries a decision out, on the tracer's thread.
func (tr *tracer) apply(a traceAnswer) {
	if !a.a.Allow {
		errno := a.a.Errno
		if errno == 0 {
			errno = unix.EPERM
		}
		if a.a.Redirect != nil {
			a.a.Redirect.Done(netip.AddrPort{}, false)
		}
		tr.deny(a.tid, errno, a.atEntry)
		return
	}
	// a.a.Capless cannot be done: there is no listener to add a socket
	// through, so a netlink socket keeps its creator's capabilities
	// under the ptrace engine (README).
	tr.stats.Allowed.Add(1)
	if a.atEntry {
		tr.entryDecided[a.tid] = true
	}
	tr.resume(a.tid, 0)
}

// deny makes the stopped call fail with errno. A tracee whose call
// cannot be made to skip is killed: resuming it would run the call.
func (tr *tracer) deny(tid int, errno unix.Errno, atEntry bool) {
	delete(tr.entryDecided, tid)
	tr.stats.Denied.Add(1)
	if err := skipSyscall(tid, -int64(errno)); err != nil {
		if errors.Is(err, unix.ESRCH) {
			tr.stats.Vanished.Add(1)
			return
		}
		tr.report(fmt.Errorf("deny a call of tracee %d: %w; killing it", tid, err))
		unix.Kill(tid, unix.SIGKILL)
		return
	}
	if atEntry {
		tr.exitRet[tid] = -int64(errno)
	}
	tr.resume(tid, 0)
}
