package bpf

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// retTrace sends a call to the tracer (the ptrace engine). With no tracer
// attached the kernel fails the call with ENOSYS: a confined process whose
// tracer died is cut off, never let through.
const retTrace = unix.SECCOMP_RET_TRACE

// seccompNrs are the numbers of seccomp(2) in each ABI (syscall_64.tbl,
// syscall_32.tbl, unistd.h, arm's calls.S): 317 is also x32's, with the
// x32 bit.
var seccompNrs = map[string]uint32{
	abiX8664:   317,
	abiI386:    354,
	abiAArch64: 277,
	abiARM:     383,
}

// errBusy is the program's answer to a seccomp(2) that asks for a
// listener under the trace program: the kernel's own answer (EBUSY) under
// the notify program, whose filter holds the chain's one listener.
var errBusy = unix.SECCOMP_RET_ERRNO | uint32(unix.EBUSY)

// traceProgram turns prog (built for the notify engine) into the ptrace
// engine's: every SECCOMP_RET_USER_NOTIF becomes SECCOMP_RET_TRACE, and a
// listener guard comes first.
//
// Why the guard: a filter's USER_NOTIF outranks TRACE (kernel/seccomp.c
// takes the strongest action of the chain), so a confined process that
// installed a filter of its own with a listener, trapping connect, and
// answered CONTINUE from another thread, would hide every connect from
// the tracer. Without a listener a USER_NOTIF filter only fails calls
// (ENOSYS), and every action stronger than TRACE fails or kills: only the
// listener must be refused. The flags are a register, read by the
// filter itself: no other thread can change them afterwards.
func traceProgram(t target, prog []bpf.Instruction) ([]bpf.Instruction, error) {
	guard, err := listenerGuard(t)
	if err != nil {
		return nil, err
	}
	out := append(guard, prog...)
	for i, in := range out {
		if r, ok := in.(bpf.RetConstant); ok && r.Val == retNotify {
			out[i] = bpf.RetConstant{Val: retTrace}
		}
	}
	return out, nil
}

// listenerGuard refuses seccomp(SECCOMP_SET_MODE_FILTER, flags with
// SECCOMP_FILTER_FLAG_NEW_LISTENER, …) in every ABI with EBUSY, and falls
// through to the rest of the program otherwise. The operation and flags
// are C unsigned ints: only their low words count.
func listenerGuard(t target) ([]bpf.Instruction, error) {
	a := newAsm()
	native, compat, check, rest := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	a.load(offArch)
	a.jump(bpf.JumpEqual, t.native.audit, native, next)
	a.jump(bpf.JumpEqual, t.compat.audit, compat, rest)

	a.mark(native)
	a.load(offNr)
	nr := seccompNrs[t.native.name]
	if t.x32 != nil {
		a.jump(bpf.JumpEqual, nr|x32Bit, check, next)
	}
	a.jump(bpf.JumpEqual, nr, check, rest)

	a.mark(compat)
	a.load(offNr)
	a.jump(bpf.JumpEqual, seccompNrs[t.compat.name], check, rest)

	a.mark(check)
	a.load(argLo(0))
	a.jump(bpf.JumpEqual, unix.SECCOMP_SET_MODE_FILTER, next, rest)
	a.load(argLo(1))
	a.jump(bpf.JumpBitsSet, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, next, rest)
	a.ret(errBusy)
	a.mark(rest)
	return a.resolve()
}

// ErrListenerAbove says that a seccomp filter with a listener already
// confines nettrap: the kernel allows one listener per filter chain, so
// the notify engine cannot install its own (WSL2's init holds one in
// mirrored networking mode, for bind and listen; sysbox and other
// notification-based tools do too).
var ErrListenerAbove = errors.New("a seccomp listener is already installed above nettrap (WSL2 mirrored networking does this)")

// ProbeListener tells whether this process could install a filter with a
// listener: nil if so, ErrListenerAbove (wrapping EBUSY) when a filter
// above already has one, another error when the kernel or a container
// profile refuses seccomp user notification. It installs an allow-all
// filter on a throwaway OS thread, which then exits with it; the rest of
// the process is untouched.
func ProbeListener() error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread carries the filter and must exit.
		done <- probeListenerOnThread()
	}()
	return <-done
}

func probeListenerOnThread() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("bpf: set no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	fd, errno := seccompSetFilter(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, allow)
	switch errno {
	case 0:
		unix.Close(int(fd))
		return nil
	case unix.EBUSY:
		return fmt.Errorf("%w: %w", ErrListenerAbove, os.NewSyscallError("seccomp", errno))
	}
	return fmt.Errorf("bpf: seccomp user notification: %w", os.NewSyscallError("seccomp", errno))
}

// InstallTrace sets no_new_privs on the calling thread and installs prog
// (built with Options.Trace) on that thread only, without a listener:
// the calls it traps stop the caller for its tracer. Same contract as
// Install: a locked thread that dies afterwards.
func InstallTrace(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > unix.BPF_MAXINSNS {
		return fmt.Errorf("bpf: install: program has %d instructions (want 1..%d)", len(prog), unix.BPF_MAXINSNS)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("bpf: set no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	if _, errno := seccompSetFilter(0, prog); errno != 0 {
		return fmt.Errorf("bpf: install filter: %w", os.NewSyscallError("seccomp", errno))
	}
	return nil
}
