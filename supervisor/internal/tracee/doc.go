// Package tracee reads and writes a stopped tracee for the ptrace
// engine: its call as PTRACE_GET_SYSCALL_INFO tells it (SyscallInfo),
// its registers in the tracer's 64-bit layout, and the per-architecture
// edits the engine makes to them: skip the call with a return value,
// set the return value at exit, replace the call at its stop, rewind the
// thread onto its syscall instruction for the next call of the hand-over
// of a capability-free netlink socket.
package tracee
