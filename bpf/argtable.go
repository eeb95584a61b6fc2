package bpf

import "golang.org/x/sys/unix"

// Socket constants the socket rows compare against. They are the same on
// amd64 and arm64 (include/linux/socket.h, include/linux/net.h).
const (
	sockTypeMask = 0xf // SOCK_TYPE_MASK: strips SOCK_NONBLOCK and SOCK_CLOEXEC
)

// Shorthands for the table's checks. Arguments that are C ints are read
// on their low word only: the kernel truncates those registers, so
// garbage in the high half changes nothing, and must not dodge a rule.
func isLo(arg uint32, vals ...uint32) argCheck {
	return argCheck{arg: arg, word: lo, values: widen(vals)}
}

func notLo(arg uint32, vals ...uint32) argCheck {
	c := isLo(arg, vals...)
	c.not = true
	return c
}

func widen(vals []uint32) []uint64 {
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = uint64(v)
	}
	return out
}

// argTable is the argument table of the notify program (step 3 of the
// layout in doc.go) for the native ABI native, whose extra numbers
// (Options.extraTraps) are trapped as well. Each syscall's rows are tried
// in order; a call that matches none is allowed. A syscall of a side
// (native, foreign) with no rows at all goes up whenever it is trapped.
func argTable(native *abiInfo, extra []uint32) []argRule {
	inet := isLo(0, unix.AF_INET, unix.AF_INET6)
	sockType := func(types ...uint32) argCheck {
		return argCheck{arg: 1, word: lo, mask: sockTypeMask, values: widen(types)}
	}
	rules := []argRule{
		// socket(domain, type, protocol). Only unix, netlink, and
		// stream or datagram inet sockets are created without a look:
		// every other family (packet, XDP, vsock, Bluetooth, CAN, TIPC,
		// …) can reach another host or put frames on the wire with no
		// address for the filter to check, and so can raw and
		// SOCK_PACKET inet sockets. The type is masked with
		// SOCK_TYPE_MASK to strip SOCK_NONBLOCK and SOCK_CLOEXEC.
		//
		// SCTP connects through setsockopt(SCTP_SOCKOPT_CONNECTX) and
		// sends to addresses carried in control messages, past every
		// check here: its sockets go up like raw ones. (A datagram inet
		// socket is allowed whatever the protocol.)
		{sys: "socket", abis: nativeABI, ret: retNotify,
			checks: []argCheck{inet, sockType(unix.SOCK_STREAM, unix.SOCK_SEQPACKET), isLo(2, unix.IPPROTO_SCTP)}},
		{sys: "socket", abis: nativeABI, ret: retAllow,
			checks: []argCheck{inet, sockType(unix.SOCK_STREAM, unix.SOCK_SEQPACKET, unix.SOCK_DGRAM)}},
		{sys: "socket", abis: nativeABI, ret: retAllow, checks: []argCheck{isLo(0, unix.AF_UNIX)}},
		// AF_NETLINK goes up too: in nettrap's own network namespace
		// the supervisor creates the socket itself, without
		// capabilities (see supervisor/netlink.go).
		{sys: "socket", abis: nativeABI, ret: retNotify},
	}
	rules = append(rules, setsockoptRules()...)
	rules = append(rules,
		// ioctl(fd, request, …): the request is an unsigned int. Only
		// NetnsIoctls go up; any request outside 0x8900-0x89ff costs
		// two comparisons.
		argRule{sys: "ioctl", abis: anyABI, ret: retAllow,
			checks: []argCheck{{arg: 1, word: lo, ranges: [][2]uint32{{0x8900, 0x89ff}}, not: true}}},
		argRule{sys: "ioctl", abis: anyABI, ret: retNotify, checks: []argCheck{ioctlCheck()}},
		// bpf(cmd, attr, size): cmd is an int. Only the commands that
		// attach a program go up; the supervisor reads the attach type.
		argRule{sys: "bpf", abis: anyABI, ret: retNotify, checks: []argCheck{isLo(0, BPFAttachCmds...)}},
		// ptrace(request, pid, …): only attachRequests reach another
		// process. A foreign ABI's request is a 32-bit long: its low
		// word alone.
		argRule{sys: "ptrace", abis: foreignABI, ret: retNotify, checks: []argCheck{isLo(0, attachRequests...)}},
		// The native request is a long: all 64 bits count.
		argRule{sys: "ptrace", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 0, word: full, values: widen(attachRequests)}}},
	)
	// A known quirk, kept so that issue 20 changes no verdict: the
	// program before the table sent a native ptrace whose request was
	// not an attach on to the unconditional native traps after it still
	// holding the word of the request it had loaded last (the high half
	// if it was not 0, else the low one), and compared that word as a
	// syscall number. So ptrace(311) and ptrace(438) on x86_64 (271, 438
	// on arm64), with Options.Exec also ptrace(59) and ptrace(322) (221,
	// 281), go up, and so does a request whose high half is one of those
	// numbers. That was the layout go-seccomp-bpf gave this part (its
	// assembler did not reload nr after a failed argument condition).
	// None of those numbers is a ptrace request (the kernel would answer
	// EIO); the supervisor denies them as a cross-process attempt unless
	// the pid is a descendant. Dropping the quirk is a change of its own.
	quirk := append([]uint32{native.nrOf(ProcessVMWritev), native.nrOf(PidfdGetfd)}, extra...)
	rules = append(rules,
		argRule{sys: "ptrace", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 0, word: full, values: widen(quirk)}}},
		argRule{sys: "ptrace", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 0, word: hi, values: widen(quirk)}}},
		// sendto(fd, buf, len, flags, dest_addr, addrlen): dest_addr
		// is a full 64-bit pointer, NULL only when both halves are 0;
		// a send on a connected socket stays in the kernel. (A foreign
		// sendto has no rows: it always goes up.)
		argRule{sys: "sendto", abis: nativeABI, ret: retAllow,
			checks: []argCheck{{arg: 4, word: full, values: []uint64{0}}}},
		argRule{sys: "sendto", abis: nativeABI, ret: retNotify},
	)
	return rules
}

// setsockoptRules: setsockopt(fd, level, optname, …), level and optname
// C ints. Only the options of TrappedSockOpts go up (source routes,
// interface pinning, multicast joins, netfilter table writes); one row a
// level.
func setsockoptRules() []argRule {
	var rules []argRule
	for _, lv := range sockOptLevels() {
		names := argCheck{arg: 2, word: lo}
		for _, o := range TrappedSockOpts {
			switch {
			case o.Level != lv:
			case o.Last > o.Name:
				names.ranges = append(names.ranges, [2]uint32{o.Name, o.Last})
			default:
				names.values = append(names.values, uint64(o.Name))
			}
		}
		rules = append(rules, argRule{sys: "setsockopt", abis: anyABI, ret: retNotify,
			checks: []argCheck{isLo(1, lv), names}})
	}
	return rules
}

// ioctlCheck holds for the requests of NetnsIoctls, merged into runs.
func ioctlCheck() argCheck {
	c := argCheck{arg: 1, word: lo}
	for _, r := range ioctlRanges() {
		if r[0] == r[1] {
			c.values = append(c.values, uint64(r[0]))
		} else {
			c.ranges = append(c.ranges, r)
		}
	}
	return c
}

// attachRequests are the ptrace requests that go up, on every ABI: only
// these reach another process; the rest of ptrace (PTRACE_TRACEME,
// requests on an attached tracee) passes.
var attachRequests = []uint32{unix.PTRACE_ATTACH, unix.PTRACE_SEIZE}

// traceTable is the argument table of the trace guard (trace.go), the same
// on every ABI; a call that matches no row goes on to the notify
// program. The operations and flags checked are registers, read by the
// filter itself: no other thread can change them afterwards.
var traceTable = []argRule{
	// seccomp(2) asking for a listener: EBUSY.
	{sys: "seccomp", abis: anyABI, ret: errBusy, checks: []argCheck{
		isLo(0, unix.SECCOMP_SET_MODE_FILTER),
		{arg: 1, word: lo, bits: unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}}},
	// clone(2) with CLONE_UNTRACED: EPERM.
	{sys: "clone", abis: anyABI, ret: errPerm, checks: []argCheck{{arg: 0, word: lo, bits: cloneFlag}}},
	// clone3(2): ENOSYS, whatever its flags (they are in memory).
	{sys: "clone3", abis: anyABI, ret: errNoSys},
}
