package ptrace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// seccompStop handles a stop of SECCOMP_RET_TRACE: the filter trapped
// the call, which has not run yet.
func (tr *Tracer) seccompStop(pid int) {
	var info tracee.SyscallInfo
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
func (tr *Tracer) syscallStop(pid int) {
	var info tracee.SyscallInfo
	if !tr.syscallInfo(pid, &info) {
		return
	}
	switch info.Op {
	case tracee.InfoEntry:
		if tr.eval == nil {
			break // seccomp stops only: a hand-over's signal handler
		}
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
	case tracee.InfoExit:
		if r, ok := tr.exitRet[pid]; ok {
			delete(tr.exitRet, pid)
			if err := tracee.SetReturn(pid, r); err != nil && !errors.Is(err, unix.ESRCH) {
				tr.report(fmt.Errorf("set the return value of tracee %d: %w", pid, err))
			}
		}
	}
	tr.resume(pid, 0)
}

// syscallInfo reads the stopped call. A tracee it cannot read is denied
// (its call must not run unread), or gone.
func (tr *Tracer) syscallInfo(pid int, info *tracee.SyscallInfo) bool {
	err := tracee.GetSyscallInfo(pid, info)
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
func (tr *Tracer) dispatch(pid int, info *tracee.SyscallInfo, atEntry bool) {
	tr.stats.Notifications.Add(1)
	c := tr.newCall(pid, info)
	tr.current[pid] = c.ID
	if tr.plainOnce[pid] && c.Syscall.Kind == bpf.Socket {
		delete(tr.plainOnce, pid) // a hand-over gave up: as asked
		tr.apply(traceAnswer{tid: pid, id: c.ID, a: decision.Allow(), atEntry: atEntry})
		return
	}
	if pid == tr.main && !tr.execed && c.Syscall.Kind == bpf.Execve && !c.Syscall.Foreign {
		// The stub's exec of the command (a filter that traps execve).
		tr.apply(traceAnswer{tid: pid, id: c.ID, a: decision.Allow(), atEntry: atEntry})
		return
	}
	tr.read(c)
	if q, ok := tr.decider.(decision.QuickDecider); !ok || !q.Quick(&c.Call.Call) {
		// A decision that may wait for a confined process (an inner
		// nettrap asked which test runs) needs the tracer free to serve
		// that process's stops: any tracee may stop for a signal.
		tr.aside(func() traceAnswer {
			defer c.Release()
			ans, _ := tr.carryOut(c, tr.judge(c, atEntry), true)
			return ans
		})
		return
	}
	ans, blocks := tr.carryOut(c, tr.judge(c, atEntry), false)
	if blocks {
		// An emulated call that may block for long: made aside, so the
		// other stops are served meanwhile.
		tr.aside(func() traceAnswer {
			defer c.Release()
			ans, _ := tr.carryOut(c, ans, true)
			return ans
		})
		return
	}
	c.Release()
	tr.apply(ans)
}

// aside runs f on another goroutine, which posts the answer and wakes
// the tracer (see tracer). Slower than deciding on the tracer's thread
// (two thread hand-offs and a waker stop), so only where that could wait
// on the tracer, or for long.
func (tr *Tracer) aside(f func() traceAnswer) {
	tr.inflight.Add(1)
	go func() {
		defer tr.inflight.Done()
		tr.post(f())
	}()
}

// newCall is the call a stop reports, with the supervisor's Task.
func (tr *Tracer) newCall(pid int, info *tracee.SyscallInfo) *emulate.Call {
	c := &emulate.Call{Call: decode.Call{Call: decision.Call{ID: tr.ids.Add(1), TID: pid,
		Syscall: bpf.Lookup(info.Arch, int32(info.Nr)), Args: info.Args}}}
	c.Bind(tr, tr.netns, tr.emu != nil)
	return c
}

// read reads the call's arguments from the stopped tracee, and what the
// kernel tells of them.
func (tr *Tracer) read(c *emulate.Call) {
	if !c.Syscall.Foreign {
		m := c.Mem(&tr.vmRead)
		m.Prefetch = tr.emu != nil
		c.Dests, c.Err = decode.ReadDests(m, &c.Call)
		m.Close()
	}
	c.Decode()
}

// judge asks the decider about the call read.
func (tr *Tracer) judge(c *emulate.Call, atEntry bool) traceAnswer {
	return traceAnswer{tid: c.TID, id: c.ID, a: answer.Decide(tr.decider, tr.report, c), atEntry: atEntry, call: c}
}

// carryOut makes an allowed inet call itself where it can (the emulator,
// as under the notify engine: the kernel never reads the address a second
// time), or a denied one to its stand-in. With mayBlock false a call that
// may block for long is not made: blocks says so.
func (tr *Tracer) carryOut(c *emulate.Call, ans traceAnswer, mayBlock bool) (_ traceAnswer, blocks bool) {
	if ans.a.Capless() && c.Syscall.Kind != bpf.Socket {
		// A netlink send naming the kernel: made without capabilities,
		// with the bytes checked (supervisor/internal/notify/netlink.go).
		if val, errno, ok := emulate.SendCapless(tr.capMaker, c); ok {
			tr.stats.CaplessNetlink.Add(1)
			ans.ret = retOf(val, errno)
			return ans, false
		}
	}
	if ans.a.Allowed() && emulate.ReapedPidfd(c) {
		// Whatever the descriptor number names by now, nothing is taken.
		ans.ret = retOf(0, unix.ESRCH)
		return ans, false
	}
	if tr.emu != nil && ans.a.Allowed() && emulate.EmulablePidfd(c) {
		if c.PidfdTarget == c.Task.Caller().PID && c.Args[2] == 0 {
			ans.dupSelf = true
		} else if r, done := tr.emu.Cannot(c, emulate.ErrNoHandOver); done {
			// No ADDFD here: the kernel would look the pidfd up again.
			ans.ret = retOf(r.Val, r.Errno)
		}
		return ans, false
	}
	r, how := answer.Settle(tr.emu, c, ans.a, mayBlock, tr.report)
	switch how {
	case answer.WouldBlock:
		return ans, true
	case answer.Emulated:
		tr.stats.Emulated.Add(1)
		ans.ret = retOf(r.Val, r.Errno)
	case answer.Answered:
		ans.ret = retOf(r.Val, r.Errno)
	}
	if !ans.a.Allowed() {
		ans.a = decision.Deny(ans.a.Errno()) // its redirect is settled
	}
	return ans, false
}

// isNetlinkSocket tells a native socket(AF_NETLINK, …).
func isNetlinkSocket(c *emulate.Call) bool {
	return c != nil && c.Syscall.Kind == bpf.Socket && !c.Syscall.Foreign && int32(c.Args[0]) == unix.AF_NETLINK
}

func retOf(val int64, errno unix.Errno) *int64 {
	if errno != 0 {
		val = -int64(errno)
	}
	return &val
}

// apply carries a decision out, on the tracer's thread. An answer to a
// call that was answered already (early, by an emulated connect's watch)
// is dropped: the thread is in another call by now, or running.
func (tr *Tracer) apply(a traceAnswer) {
	if id, ok := tr.current[a.tid]; !ok || id != a.id {
		return
	}
	delete(tr.current, a.tid)
	switch {
	case a.ret != nil:
		if !a.early {
			if a.a.Allowed() {
				tr.stats.Allowed.Add(1)
			} else {
				tr.stats.Denied.Add(1)
			}
		}
		tr.skip(a.tid, *a.ret, a.atEntry)
	case a.a.Allowed():
		if a.a.Capless() && isNetlinkSocket(a.call) && tr.startHandOver(a.call, a.atEntry) {
			return
		}
		if a.dupSelf && !tr.dupSelf(a.call) {
			return
		}
		tr.stats.Allowed.Add(1)
		if a.atEntry {
			tr.entryDecided[a.tid] = true
		}
		tr.resume(a.tid, 0)
	default:
		tr.stats.Denied.Add(1)
		tr.skip(a.tid, -int64(a.a.Errno()), a.atEntry)
	}
}

// deny makes a stopped call fail with errno, undecided (unreadable).
func (tr *Tracer) deny(tid int, errno unix.Errno, atEntry bool) {
	delete(tr.current, tid)
	tr.stats.Denied.Add(1)
	tr.skip(tid, -int64(errno), atEntry)
}

// skip makes the stopped call return ret without running. A tracee whose
// call cannot be made to skip is killed: resuming it would run the call.
func (tr *Tracer) skip(tid int, ret int64, atEntry bool) {
	delete(tr.entryDecided, tid)
	if err := tracee.SkipSyscall(tid, ret); err != nil {
		if errors.Is(err, unix.ESRCH) {
			tr.stats.Vanished.Add(1)
			return
		}
		tr.report(fmt.Errorf("answer a call of tracee %d: %w; killing it", tid, err))
		unix.Kill(tid, unix.SIGKILL)
		return
	}
	if atEntry {
		tr.exitRet[tid] = ret
	}
	tr.resume(tid, 0)
}
