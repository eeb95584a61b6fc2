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

// cloneNrs and clone3Nrs are clone(2) and clone3(2) in each ABI.
var (
	cloneNrs  = map[string]uint32{abiX8664: 56, abiI386: 120, abiAArch64: 220, abiARM: 120}
	clone3Nr  = uint32(435) // the same in every ABI
	cloneFlag = uint32(unix.CLONE_UNTRACED)
)

// Answers of the trace guard.
var (
	errBusy  = unix.SECCOMP_RET_ERRNO | uint32(unix.EBUSY)
	errPerm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	errNoSys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// traceProgram turns prog (built for the notify engine) into the ptrace
// engine's: every SECCOMP_RET_USER_NOTIF becomes SECCOMP_RET_TRACE, and a
// guard comes first that refuses what would take a process out of the
// tracer's sight:
//
//   - seccomp(2) asking for a listener gets EBUSY (what the kernel answers
//     under the notify engine, whose filter holds the chain's one). A
//     filter's USER_NOTIF outranks TRACE (kernel/seccomp.c takes the
//     strongest action of the chain), so a confined process that
//     installed a filter of its own with a listener trapping connect, and
//     answered CONTINUE from another thread, would hide every connect
//     from the tracer. Every action stronger than TRACE other than that
//     fails or kills.
//   - clone(2) with CLONE_UNTRACED gets EPERM: the child would not be
//     traced (PTRACE_O_TRACECLONE does not force it). Its trapped calls
//     would fail with ENOSYS (a TRACE action without a tracer), but under
//     a listener above, which outranks TRACE on the calls it traps, they
//     could run unseen.
//   - clone3(2) gets ENOSYS: its flags are in memory, which the filter
//     cannot read and another thread could change after the tracer did.
//     C libraries fall back to clone(2) on ENOSYS, and Go uses clone3 only
//     for a cgroup or a time namespace of the child.
//
// The operations and flags checked are registers, read by the filter
// itself: no other thread can change them afterwards.
func traceProgram(t target, prog []bpf.Instruction) ([]bpf.Instruction, error) {
	guard, err := traceGuard(t)
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

// traceGuard is the guard of traceProgram, for every ABI of t: a
// dispatch on nr to the blocks of traceTable. It falls through to the
// rest of the program.
func traceGuard(t target) ([]bpf.Instruction, error) {
	a := newAsm()
	native, compat, rest := a.newLabel(), a.newLabel(), a.newLabel()
	blocks := planRuleBlocks(a, traceTable)
	for _, sys := range traceSyscalls {
		if _, ok := blocks.native[sys]; !ok {
			return nil, fmt.Errorf("trace guard: no rules for %s", sys)
		}
		if _, ok := blocks.foreign[sys]; !ok {
			return nil, fmt.Errorf("trace guard: no foreign rules for %s", sys)
		}
	}
	if len(blocks.native) != len(traceSyscalls) {
		return nil, fmt.Errorf("trace guard: rules for %d syscalls, %d dispatched", len(blocks.native), len(traceSyscalls))
	}
	a.load(offArch)
	a.jump(bpf.JumpEqual, t.native.audit, native, next)
	a.jump(bpf.JumpEqual, t.compat.audit, compat, rest)

	a.mark(native)
	a.load(offNr)
	for _, bit := range nativeBits(t) {
		for _, sys := range traceSyscalls {
			a.jump(bpf.JumpEqual, traceNr(t.native.name, sys)|bit, blocks.native[sys], next)
		}
	}
	a.goTo(rest)

	a.mark(compat)
	a.load(offNr)
	for _, sys := range traceSyscalls {
		a.jump(bpf.JumpEqual, traceNr(t.compat.name, sys), blocks.foreign[sys], next)
	}
	a.goTo(rest)

	if err := blocks.emit(a, rest); err != nil {
		return nil, err
	}
	a.placeRets()
	a.mark(rest)
	return a.resolve()
}

// traceSyscalls are the syscalls of traceTable.
var traceSyscalls = []string{"seccomp", "clone", "clone3"}

// traceNr is the number of one of traceSyscalls in the ABI named abi.
func traceNr(abi, sys string) uint32 {
	switch sys {
	case "seccomp":
		return seccompNrs[abi]
	case "clone":
		return cloneNrs[abi]
	case "clone3":
		return clone3Nr
	}
	panic("bpf: no number for " + sys)
}

// nativeBits are the nr bits of the native arch's ABIs: none, and x32's.
func nativeBits(t target) []uint32 {
	if t.x32 != nil {
		return []uint32{0, x32Bit}
	}
	return []uint32{0}
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
