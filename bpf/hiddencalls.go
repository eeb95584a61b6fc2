package bpf

import (
	"slices"

	"golang.org/x/sys/unix"
)

// The probe's argument values (see ProbeHidden): each makes the call
// fail before it has any effect, should a filter above let it run.
const (
	badPtr    = 8       // in the first page, never mapped (vm.mmap_min_addr)
	noSuchPid = 1 << 30 // above PID_MAX_LIMIT
	probeFD   = 3       // a descriptor number as programs use them
	noFD      = ^uintptr(0)
)

// otherTraps are calls nettrap does not trap that a listener above may
// (WSL2's init traps bind and listen), probed on the native ABI to say
// so; the numbers are the native ABI's (unix.SYS_* of the host).
var otherTraps = []struct {
	name string
	nr   uint32
	args [6]uintptr
}{
	{"bind", unix.SYS_BIND, [6]uintptr{noFD, badPtr, 16}},
	{"listen", unix.SYS_LISTEN, [6]uintptr{noFD, 0}},
}

// probeCalls are the probe's calls for target t: every trapped syscall of
// every ABI, once per shape of arguments, then the others. The native
// connect on descriptor -1 to loopback comes first: a listener above that
// traps nettrap's calls takes it first and the probe stops there
// (ProbeHidden), so that another nettrap above, whose listener that is,
// sees one allowed connect that fails with EBADF, where its policy would
// count a call through a 32-bit ABI or at another process as a blocked
// attempt.
func probeCalls(t target) []probeCall {
	var calls []probeCall
	abis := []*abiInfo{t.native, t.compat}
	if t.x32 != nil {
		abis = append(abis, t.x32)
	}
	for _, abi := range abis {
		traps := abi.traps
		if abi == t.native {
			traps = append(append([]trap(nil), traps...), execTraps[abi.name]...)
		}
		name := func(k Kind) string {
			if abi == t.native {
				return k.String()
			}
			return abi.name + " " + k.String()
		}
		for _, tr := range traps {
			for shape, fd := range []uintptr{noFD, probeFD} {
				if args, ok := probeArgs(tr.kind, fd, shape > 0); ok {
					calls = append(calls, probeCall{abi: abi, nr: tr.nr, kind: tr.kind, name: name(tr.kind), args: args})
				}
			}
		}
	}
	for _, o := range otherTraps {
		calls = append(calls, probeCall{abi: t.native, nr: o.nr, name: o.name, args: o.args, other: true})
	}
	first := slices.IndexFunc(calls, func(c probeCall) bool { return c.abi == t.native && c.kind == Connect })
	c := calls[first] // Delete shifts what follows it
	return slices.Insert(slices.Delete(calls, first, first+1), 0, c)
}

// probeArgs are the argument registers of a probe call of kind k on
// descriptor fd; real: fd is a number a real descriptor may have, so only
// kinds whose bad pointer is read before anything is done on fd take it
// (a pidfd_getfd on a real pidfd would take a descriptor).
func probeArgs(k Kind, fd uintptr, real bool) ([6]uintptr, bool) {
	switch k {
	case Connect:
		if !real {
			// The first probe call (probeCalls): a loopback address,
			// which a nettrap above allows (and the kernel refuses on
			// descriptor -1 before it reads it) instead of counting it.
			return [6]uintptr{fd, probeLoopbackPtr(), 16}, true
		}
		return [6]uintptr{fd, badPtr, 16}, true
	case SendTo:
		return [6]uintptr{fd, badPtr, 1, 0, badPtr, 16}, true
	case SendMsg:
		return [6]uintptr{fd, badPtr, 0}, true
	case SendMMsg:
		return [6]uintptr{fd, badPtr, 1, 0}, true
	case SetSockOpt:
		return [6]uintptr{fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, badPtr, 8}, true
	case Ioctl:
		return [6]uintptr{fd, unix.SIOCADDRT, badPtr}, true
	}
	if real {
		return [6]uintptr{}, false
	}
	switch k {
	case Socket:
		// Runs if hidden: the socket it makes is closed (probeOne).
		return [6]uintptr{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, true
	case SocketCall:
		return [6]uintptr{3 /* SYS_CONNECT */, badPtr}, true
	case IOUringSetup:
		return [6]uintptr{0, badPtr}, true
	case Ptrace:
		return [6]uintptr{unix.PTRACE_SEIZE, noSuchPid}, true
	case ProcessVMWritev:
		return [6]uintptr{noSuchPid, badPtr, 1, badPtr, 1}, true
	case PidfdGetfd:
		return [6]uintptr{fd, 0}, true
	case BPF:
		return [6]uintptr{unix.BPF_PROG_ATTACH, badPtr, 16}, true
	case Execve:
		return [6]uintptr{badPtr, badPtr, badPtr}, true
	case Execveat:
		return [6]uintptr{fd, badPtr, badPtr, badPtr}, true
	}
	return [6]uintptr{}, false
}
