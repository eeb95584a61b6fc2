// Package bpf builds nettrap's seccomp program and installs it.
//
// # Program layout
//
// The program is one classic BPF filter for one native architecture (amd64
// or arm64), emitted by one assembler with labels (asm.go). It is laid out
// in this order:
//
//  1. Architecture guard (code, program.go). It loads seccomp_data.arch:
//     the native 64-bit arch goes on to its dispatch, the compat arch
//     (i386 on amd64, arm on arm64) to the compat one, and any other arch
//     kills the process.
//  2. Dispatch on nr (code), one for each ABI. Each trapped syscall of
//     the ABI (syscalls.go) jumps to its block of argument rules (step 3)
//     or, when it has none on that side, straight to the supervisor;
//     every other syscall is allowed.
//     - compat: every kind the native ABI traps is trapped there too
//     (socketcall; the direct socket, connect, sendto, sendmsg,
//     sendmmsg; io_uring_setup; process_vm_writev, pidfd_getfd; ptrace
//     PTRACE_ATTACH/SEIZE, the setsockopt options of TrappedSockOpts, the
//     ioctls of NetnsIoctls and bpf's attach commands, by the foreign
//     rows of the table). The supervisor does not decode 32-bit calls: it
//     denies whatever reaches it. Every other compat syscall is allowed,
//     so 32-bit helpers keep running;
//     - x32 (amd64 only) shares AUDIT_ARCH_X86_64 and is told apart only
//     by bit 30 of nr, which the native dispatch tests first. An x32 nr
//     is decided like a compat one (both numbers, where x32 has its own
//     and, before Linux 5.4, could also reach the 64-bit one);
//     - native: socket, setsockopt, ioctl, bpf, sendto and ptrace go to
//     their rules; connect, sendmsg, sendmmsg, io_uring_setup,
//     process_vm_writev, pidfd_getfd (and with Options.Exec execve,
//     execveat) go up.
//  3. Argument rules: a table (argtable.go) of rows (syscall, ABIs,
//     checks, action), emitted by one routine (rules.go), after gVisor's
//     pkg/seccomp. A check reads one argument's low word, high word or
//     all 64 bits, masks it, and compares it with values, ranges or bits.
//     Most of these arguments are C ints: the kernel ignores the upper
//     32 bits of those registers, so a comparison on the full 64 bits
//     could be dodged with garbage in the high half; they are read on
//     their low word. The rows say:
//     - socket(2): AF_UNIX is allowed; AF_NETLINK goes up (the
//     supervisor creates it without capabilities in nettrap's own network
//     namespace, so the kernel refuses every change made through it);
//     AF_INET/AF_INET6 with (type & SOCK_TYPE_MASK) SOCK_STREAM,
//     SOCK_DGRAM or SOCK_SEQPACKET are allowed unless a stream or
//     seqpacket socket asks for SCTP; everything else goes up (raw and
//     SOCK_PACKET inet sockets, and every other family: packet, XDP,
//     vsock, Bluetooth, CAN, TIPC, ...);
//     - setsockopt(2): only the (level, optname) pairs of TrappedSockOpts
//     go up (source routes, interface pinning, multicast joins, legacy
//     netfilter table writes; the IPVS commands as one range);
//     - ioctl(2): only the requests of NetnsIoctls go up (routes,
//     addresses, interfaces, ARP, bridges, tunnels); any request outside
//     0x8900-0x89ff is two comparisons;
//     - bpf(2): only BPF_PROG_ATTACH and BPF_LINK_CREATE go up (the
//     supervisor reads the attach type); BPF_PROG_LOAD, maps, … stay;
//     - ptrace(2): PTRACE_ATTACH and PTRACE_SEIZE go up, on the low 32
//     bits of a foreign ABI's request, on the full 64 bits of the native
//     one (and a few invalid native requests that equal a syscall
//     number: see argTable);
//     - sendto(2), native: up only when its 64-bit dest_addr (arg 4) is
//     non-NULL. A foreign sendto has no rows: it always goes up.
//
// go-seccomp-bpf once assembled the native part; the package keeps it for
// its syscall tables only. Its argument comparisons are 64-bit only (no
// low-word compare for C ints, no mask), and Policy.Assemble picks its
// arch from runtime.GOARCH and sends a foreign arch to the default action
// (allow), which the guard must decide first.
//
// # Why the guard comes first
//
// go-seccomp-bpf (whose Policy this program once used) sends a syscall of
// a foreign architecture to the policy's default action. Our default is
// allow, so an `int 0x80` (i386 ABI) from an amd64 process would skip
// every rule. The guard therefore sends every non-native arch, and every
// x32 nr, to its own dispatch before any native comparison: the native
// rows only ever see native 64-bit syscalls.
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
// The guard's seccomp, clone and clone3 rules are a second table
// (traceTable) for the same emitter. ProbeListener tells whether a
// listener is already installed above this process (the notify engine
// then gets EBUSY).
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
