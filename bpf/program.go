package bpf

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// Return values of the program.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// Offsets in struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Socket constants the socket block compares against. They are the same
// on amd64 and arm64 (include/linux/socket.h, include/linux/net.h).
const (
	sockTypeMask = 0xf // SOCK_TYPE_MASK: strips SOCK_NONBLOCK and SOCK_CLOEXEC
)

// argLo is the offset of the low 32 bits of 64-bit argument i. Both
// supported targets are little-endian, so the low word comes first.
func argLo(i uint32) uint32 { return offArgs + 8*i }

// Program builds the whole filter for goarch ("amd64" or "arm64").
func Program(goarch string) ([]bpf.Instruction, error) { return ProgramWith(goarch, Options{}) }

// ProgramWith builds the filter for goarch with the options o.
func ProgramWith(goarch string, o Options) ([]bpf.Instruction, error) {
	t, ok := targets[goarch]
	if !ok {
		return nil, fmt.Errorf("bpf: unsupported goarch %q (want amd64 or arm64)", goarch)
	}
	if cpu.IsBigEndian {
		// argLo takes the low word of an argument first, as the
		// little-endian targets lay it out.
		return nil, errors.New("bpf: cannot build a little-endian filter on a big-endian host")
	}
	guard, err := guardProgram(t)
	if err != nil {
		return nil, fmt.Errorf("bpf: arch guard for %s: %w", goarch, err)
	}
	body, err := nativePolicy(t.native, o.extraTraps(t.native))
	if err != nil {
		return nil, fmt.Errorf("bpf: native policy for %s: %w", goarch, err)
	}
	prog := append(guard, body...)
	if o.Trace {
		if prog, err = traceProgram(t, prog); err != nil {
			return nil, fmt.Errorf("bpf: trace program for %s: %w", goarch, err)
		}
	}
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bpf: program has %d instructions, the kernel takes %d", len(prog), unix.BPF_MAXINSNS)
	}
	return prog, nil
}

// Assemble builds the program for goarch and encodes it for seccomp(2).
func Assemble(goarch string) ([]unix.SockFilter, error) { return AssembleWith(goarch, Options{}) }

// AssembleWith builds the program for goarch with the options o and
// encodes it for seccomp(2).
func AssembleWith(goarch string, o Options) ([]unix.SockFilter, error) {
	prog, err := ProgramWith(goarch, o)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("bpf: assemble: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// guardProgram emits steps 1-3 of the layout in doc.go. It ends with A
// holding nr and control falling into the native policy, which must be
// appended right after it.
func guardProgram(t target) ([]bpf.Instruction, error) {
	a := newAsm()
	l := guardLabels{
		native: a.newLabel(), compat: a.newLabel(), x32: a.newLabel(), body: a.newLabel(),
		notify: a.newLabel(), allow: a.newLabel(), socket: a.newLabel(),
		sso: a.newLabel(), ptrace: a.newLabel(), ioctl: a.newLabel(), bpfCmd: a.newLabel(),
	}

	a.load(offArch)
	a.jump(bpf.JumpEqual, t.native.audit, l.native, next)
	a.jump(bpf.JumpEqual, t.compat.audit, l.compat, next)
	a.ret(retKill)

	// Compat ABI: decided by nr, and for setsockopt and ptrace by the
	// same argument checks as the native ones.
	a.mark(l.compat)
	a.load(offNr)
	foreignTraps(a, t.compat.traps, l)
	a.ret(retAllow)

	a.mark(l.native)
	a.load(offNr)
	if t.x32 != nil {
		// x32 shares AUDIT_ARCH_X86_64, so it must be split off by nr
		// before any native comparison.
		a.jump(bpf.JumpBitsSet, x32Bit, l.x32, next)
	}
	a.jump(bpf.JumpEqual, t.native.nrOf(Socket), l.socket, next)
	a.jump(bpf.JumpEqual, t.native.nrOf(SetSockOpt), l.sso, next)
	a.jump(bpf.JumpEqual, t.native.nrOf(Ioctl), l.ioctl, next)
	a.jump(bpf.JumpEqual, t.native.nrOf(BPF), l.bpfCmd, l.body)

	if t.x32 != nil {
		a.mark(l.x32)
		foreignTraps(a, t.x32.traps, l)
		a.ret(retAllow)
	}

	socketBlock(a, l)
	setsockoptBlock(a, l)
	ptraceBlock(a, l)
	ioctlBlock(a, l)
	bpfBlock(a, l)

	a.mark(l.allow)
	a.ret(retAllow)
	a.mark(l.notify)
	a.ret(retNotify)

	// The native policy starts here; every path into it has A = nr.
	a.mark(l.body)
	return a.resolve()
}

// guardLabels are the shared places of the hand-written part.
type guardLabels struct {
	native, compat, x32, body label
	notify, allow             label
	socket, sso, ptrace       label // argument checks, entered with A = nr
	ioctl, bpfCmd             label
}

// socketBlock decides socket(domain, type, protocol). Both are C ints, so
// only the low 32 bits count (the kernel truncates the registers). Only
// unix, netlink, and stream or datagram inet sockets are created without
// a look: every other family (packet, XDP, vsock, Bluetooth, CAN, TIPC, …)
// can reach another host or put frames on the wire with no address for
// the filter to check.
func socketBlock(a *asm, l guardLabels) {
	inet, proto := a.newLabel(), a.newLabel()
	a.mark(l.socket)
	a.load(argLo(0))
	a.jump(bpf.JumpEqual, unix.AF_INET, inet, next)
	a.jump(bpf.JumpEqual, unix.AF_INET6, inet, next)
	// AF_NETLINK goes up too: in nettrap's own network namespace the
	// supervisor creates the socket itself, without capabilities (see
	// supervisor/netlink.go).
	a.jump(bpf.JumpEqual, unix.AF_UNIX, l.allow, l.notify)
	a.mark(inet)
	a.load(argLo(1))
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
	a.jump(bpf.JumpEqual, unix.SOCK_DGRAM, l.allow, next)
	a.jump(bpf.JumpEqual, unix.SOCK_STREAM, proto, next)
	a.jump(bpf.JumpEqual, unix.SOCK_SEQPACKET, proto, l.notify)
	// SCTP connects through setsockopt(SCTP_SOCKOPT_CONNECTX) and sends
	// to addresses carried in control messages, past every check here:
	// its sockets go to the supervisor like raw ones.
	a.mark(proto)
	a.load(argLo(2))
	a.jump(bpf.JumpEqual, unix.IPPROTO_SCTP, l.notify, l.allow)
}

// setsockoptBlock decides setsockopt(fd, level, optname, …): level and
// optname are C ints, so again only the low 32 bits count. Only the
// options of TrappedSockOpts go up (source routes, interface pinning,
// multicast joins); an ordinary option is two or three comparisons.
func setsockoptBlock(a *asm, l guardLabels) {
	levels := sockOptLevels()
	at := make([]label, len(levels))
	a.mark(l.sso)
	a.load(argLo(1))
	for i, lv := range levels {
		at[i] = a.newLabel()
		onFalse := next
		if i == len(levels)-1 {
			onFalse = l.allow
		}
		a.jump(bpf.JumpEqual, lv, at[i], onFalse)
	}
	for i, lv := range levels {
		a.mark(at[i])
		a.load(argLo(2))
		var names []uint32
		var ranges [][2]uint32
		for _, o := range TrappedSockOpts {
			switch {
			case o.Level != lv:
			case o.Last > o.Name:
				ranges = append(ranges, [2]uint32{o.Name, o.Last})
			default:
				names = append(names, o.Name)
			}
		}
		jumpIfAny(a, names, l.notify, next)
		jumpIfInRanges(a, ranges, l.notify)
		a.ret(retAllow)
	}
}

// jumpIfInRanges emits "goto to if A is in one of the inclusive ranges";
// it falls through when A is in none.
func jumpIfInRanges(a *asm, ranges [][2]uint32, to label) {
	for _, r := range ranges {
		past := a.newLabel()
		a.jump(bpf.JumpGreaterOrEqual, r[0], next, past)
		a.jump(bpf.JumpGreaterThan, r[1], next, to)
		a.mark(past)
	}
}

// ptraceBlock decides a foreign ABI's ptrace(request, pid, …): only
// attachRequests reach another process. The request is a
// 32-bit long there, so only its low word counts. (The native ptrace is
// decided in the native policy, on the full 64-bit request.)
func ptraceBlock(a *asm, l guardLabels) {
	a.mark(l.ptrace)
	a.load(argLo(0))
	jumpIfAny(a, attachRequests, l.notify, l.allow)
}

// ioctlBlock decides ioctl(fd, request, …): the request is an unsigned
// int, so only its low word counts. Only NetnsIoctls go up; any request
// outside 0x8900-0x89ff costs two comparisons.
func ioctlBlock(a *asm, l guardLabels) {
	a.mark(l.ioctl)
	a.load(argLo(1))
	a.jump(bpf.JumpGreaterOrEqual, 0x8900, next, l.allow)
	a.jump(bpf.JumpGreaterThan, 0x89ff, l.allow, next)
	var single []uint32
	var ranges [][2]uint32
	for _, r := range ioctlRanges() {
		if r[0] == r[1] {
			single = append(single, r[0])
		} else {
			ranges = append(ranges, r)
		}
	}
	jumpIfAny(a, single, l.notify, next)
	jumpIfInRanges(a, ranges, l.notify)
	a.ret(retAllow)
}

// bpfBlock decides bpf(cmd, attr, size): cmd is an int. Only the commands
// that attach a program go up; the supervisor reads the attach type.
func bpfBlock(a *asm, l guardLabels) {
	a.mark(l.bpfCmd)
	a.load(argLo(0))
	jumpIfAny(a, BPFAttachCmds, l.notify, l.allow)
}

// jumpIfAny emits "goto to if A is one of vals, else goto otherwise".
func jumpIfAny(a *asm, vals []uint32, to, otherwise label) {
	for i, v := range vals {
		onFalse := next
		if i == len(vals)-1 {
			onFalse = otherwise
		}
		a.jump(bpf.JumpEqual, v, to, onFalse)
	}
}

// attachRequests are the ptrace requests that go up, on every ABI: only
// these reach another process; the rest of ptrace (PTRACE_TRACEME,
// requests on an attached tracee) passes.
var attachRequests = []uint32{unix.PTRACE_ATTACH, unix.PTRACE_SEIZE}

// foreignTraps emits, for each trap of a foreign ABI, "if nr == t.nr goto
// its check": setsockopt and ptrace to their argument checks, every other
// kind straight to the supervisor. It falls through when none matches.
func foreignTraps(a *asm, traps []trap, l guardLabels) {
	for _, t := range traps {
		to := l.notify
		switch t.kind {
		case SetSockOpt:
			to = l.sso
		case Ptrace:
			to = l.ptrace
		case Ioctl:
			to = l.ioctl
		case BPF:
			to = l.bpfCmd
		}
		a.jump(bpf.JumpEqual, t.nr, to, next)
	}
}

// nativePolicy emits step 4 with asm.go's labels, the one assembler of
// the package. It expects A = nr on entry and always returns. It used to
// drive go-seccomp-bpf's Program: that library is kept for its syscall
// tables (syscalls.go), but its assembler does not serve here. Its
// argument comparisons are 64-bit only (no low-word compare for C ints,
// no mask), so steps 1-3 needed asm.go anyway; Policy.Assemble picks its
// arch from runtime.GOARCH and sends a foreign arch to the default action
// (allow), which the guard must decide first. Two assemblers for one
// program bought nothing.
func nativePolicy(native *abiInfo, extra []uint32) ([]bpf.Instruction, error) {
	a := newAsm()
	notify, allow, sendto, ptrace, tail := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	for _, k := range []Kind{Connect, SendMsg, SendMMsg, IOUringSetup} {
		a.jump(bpf.JumpEqual, native.nrOf(k), notify, next)
	}
	a.jump(bpf.JumpEqual, native.nrOf(SendTo), sendto, next)
	a.jump(bpf.JumpEqual, native.nrOf(Ptrace), ptrace, tail)

	// sendto's dest_addr is a full 64-bit pointer: NULL only when both
	// halves are 0.
	a.mark(sendto)
	a.load(argLo(4) + 4)
	a.jump(bpf.JumpEqual, 0, next, notify)
	a.load(argLo(4))
	a.jump(bpf.JumpEqual, 0, allow, notify)

	// The native ptrace request is a long: an attach only when the high
	// half is 0 and the low half one of attachRequests. A request that is
	// not falls into tail holding the word last loaded (the high half if
	// it is not 0, else the low one), which tail compares as a syscall
	// number: ptrace(311) and ptrace(438) on x86_64, and with Options.Exec
	// ptrace(59) and ptrace(322), go up. That is the layout go-seccomp-bpf
	// gave this part (its assembler does not reload nr after a failed
	// argument condition), kept so that issue 20 changes no verdict. None
	// of those numbers is a ptrace request (the kernel would answer EIO);
	// the supervisor denies them as a cross-process attempt unless the pid
	// is a descendant. Dropping the quirk is a change of its own.
	a.mark(ptrace)
	a.load(argLo(0) + 4)
	a.jump(bpf.JumpEqual, 0, next, tail)
	a.load(argLo(0))
	jumpIfAny(a, attachRequests, notify, tail)

	a.mark(tail)
	jumpIfAny(a, append([]uint32{native.nrOf(ProcessVMWritev), native.nrOf(PidfdGetfd)}, extra...), notify, allow)
	a.mark(allow)
	a.ret(retAllow)
	a.mark(notify)
	a.ret(retNotify)
	return a.resolve()
}
