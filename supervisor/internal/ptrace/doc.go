// Package ptrace is the ptrace engine. The filter returns
// SECCOMP_RET_TRACE where the notify engine's returns USER_NOTIF, and
// nettrap is the tracer of every confined process (PTRACE_SEIZE of the
// command through a stub, then PTRACE_O_TRACEFORK, VFORK and CLONE: every
// child and thread is traced from its first instruction). A trapped call
// stops its thread for the tracer, which decides as the notify engine does
// and either lets the call run or makes it skip with an errno.
//
// Guarantees, and what gives each:
//   - Fail closed. With no tracer a TRACE action fails the call with
//     ENOSYS, and PTRACE_O_EXITKILL kills every tracee when the tracer's
//     thread dies: a SIGKILLed nettrap lets nothing through.
//   - Every ABI. PTRACE_GET_SYSCALL_INFO reports (arch, nr, args) as a
//     notification does, for 32-bit calls too; the decision is the
//     notify engine's (decide, decode.ReadDests, Call.Decode).
//   - A listener above. A filter with a listener above nettrap's (WSL2's
//     init, for bind and listen) outranks TRACE on the calls it traps,
//     and a call it answers CONTINUE would never stop for us. Where the
//     start-up probe (bpf.ProbeHidden) saw it hide one of nettrap's calls,
//     or under --sealed, the tracer takes syscall-entry stops
//     (PTRACE_SYSCALL), which come before seccomp: every call stops at
//     entry, the filter's own program is run on it in user space
//     (bpf.Evaluator), and what it traps is decided there, sound whatever
//     the listener above traps. Otherwise (no listener above, or one that
//     hides none of nettrap's calls, as WSL2's) only seccomp stops are
//     used; the program refuses a listener to the confined processes
//     themselves (bpf's listener guard), so none can appear below.
//
// One OS thread, the tracer, makes every ptrace request (the kernel takes
// them only from the thread that attached) and waits for every stop.
// Decisions run on other goroutines, so a slow one (an inner nettrap
// asked which test runs) never holds the other threads' stops; a decision
// made wakes the tracer out of wait4 by stopping the waker, a child of the
// tracer's thread that only pauses (internal/ptracestub).
package ptrace
