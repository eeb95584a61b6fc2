// Package bpf builds nettrap's seccomp program and installs it.
//
// # Program layout
//
// The program is one classic BPF filter for one native architecture (amd64
// or arm64). It is laid out in this order:
//
//  1. Architecture guard (hand-written). It loads seccomp_data.arch first:
//     - the native 64-bit arch goes on to step 2;
//     - the compat arch (i386 on amd64, arm on arm64) loads nr: every
//     kind the native ABI traps is trapped there too (socketcall; the
//     direct socket, connect, sendto, sendmsg, sendmmsg; io_uring_setup;
//     process_vm_writev, pidfd_getfd; ptrace PTRACE_ATTACH/SEIZE, the
//     setsockopt options of TrappedSockOpts, the ioctls of NetnsIoctls and
//     bpf's attach commands, through the same argument checks as step 3,
//     on the low 32 bits). The supervisor does not decode
//     32-bit calls: it denies whatever reaches it. Every other compat
//     syscall is allowed, so 32-bit helpers keep running;
//     - any other arch kills the process.
//  2. x32 split (amd64 only). x32 shares AUDIT_ARCH_X86_64 and is told
//     apart only by bit 30 of nr. An x32 nr is decided here like a compat
//     one (both numbers, where x32 has its own and, before Linux 5.4,
//     could also reach the 64-bit one).
//  3. Argument checks (hand-written). go-seccomp-bpf compares 64-bit
//     values, but these arguments are C ints: the kernel ignores the upper
//     32 bits of those registers, so a library comparison against the full
//     64 bits could be dodged with garbage in the high half, and the
//     library cannot mask type with SOCK_TYPE_MASK (0xf) to strip
//     SOCK_NONBLOCK/SOCK_CLOEXEC. These blocks load only low words:
//     - socket(2): AF_UNIX is allowed; AF_NETLINK goes up (the
//     supervisor creates it without capabilities in nettrap's own network
//     namespace, so the kernel refuses every change made through it);
//     AF_INET/AF_INET6
//     with (type & 0xf) SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET are
//     allowed unless the protocol is SCTP; everything else goes up (raw
//     and SOCK_PACKET inet sockets, and every other family: packet, XDP,
//     vsock, Bluetooth, CAN, TIPC, ...);
//     - setsockopt(2): only the (level, optname) pairs of TrappedSockOpts
//     go up (source routes, interface pinning, multicast joins, legacy
//     netfilter table writes; the IPVS commands as one range); an
//     ordinary option costs two or three comparisons and stays in the
//     kernel;
//     - ioctl(2): only the requests of NetnsIoctls go up (routes,
//     addresses, interfaces, ARP, bridges, tunnels); any request outside
//     0x8900-0x89ff is two comparisons;
//     - bpf(2): only BPF_PROG_ATTACH and BPF_LINK_CREATE go up (the
//     supervisor reads the attach type); BPF_PROG_LOAD, maps, … stay;
//     - ptrace(2) of a foreign ABI: PTRACE_ATTACH and PTRACE_SEIZE go up.
//  4. Native policy (asm.go, default allow): connect, sendmsg, sendmmsg,
//     io_uring_setup, process_vm_writev, pidfd_getfd (and with
//     Options.Exec execve, execveat) -> notify; sendto -> notify only when
//     its 64-bit dest_addr (arg 4) is non-NULL; ptrace -> notify only for
//     PTRACE_ATTACH and PTRACE_SEIZE on the full 64-bit request (and a
//     few invalid requests that equal a syscall number: see nativePolicy).
//     It was once assembled with go-seccomp-bpf's Program; the package
//     now has one assembler (see nativePolicy for why the library's does
//     not serve) and keeps the library for its syscall tables.
//
// # Why the guard comes first
//
// go-seccomp-bpf (whose Policy this program once used) sends a syscall of
// a foreign architecture to the policy's default action. Our default is
// allow, so an `int 0x80` (i386 ABI) from an amd64 process would skip
// every rule. The guard therefore decides every non-native arch, and
// every x32 nr, before the native policy runs: that part only ever sees
// native 64-bit syscalls.
//
// # Speed
//
// Arguments are loaded only after nr is known to be one of the intercepted
// calls. For every other syscall the verdict depends on arch and nr alone,
// which lets the kernel's seccomp action cache (5.11+) allow those
// syscalls without running the filter at all. ioctl and bpf are decided by
// an argument, so they run the filter (a few dozen instructions) but stay
// in the kernel unless the request is one of the trapped ones.
//
// # The ptrace engine's program
//
// Options.Trace (or TraceProgram, for an assembled program) builds the same
// program with SECCOMP_RET_TRACE wherever it would notify, behind a guard
// (trace.go) that keeps every confined process in the tracer's sight: a
// seccomp(2) that asks for a listener gets EBUSY (a listener's USER_NOTIF
// would outrank TRACE), clone(2) with CLONE_UNTRACED gets EPERM, and
// clone3(2), whose flags the filter cannot read, ENOSYS. Evaluator runs an
// assembled program in user space, for the tracer's syscall-entry stops.
// ProbeListener tells whether a listener is already installed above this
// process (the notify engine then gets EBUSY).
//
// # Installing
//
// Install sets no_new_privs and installs the filter on the calling thread
// only (no TSYNC), with SECCOMP_FILTER_FLAG_NEW_LISTENER and, when the
// kernel accepts it (5.19+), SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV. The
// caller locks the OS thread, installs, and lets that thread die (or execs
// from it), so that no other goroutine ever runs confined by accident.
// InstallTrace does the same without a listener, for the ptrace engine.
package bpf
