// Package supervisor starts a command confined by nettrap's seccomp filter
// and answers the kernel for every call the filter hands to user space.
//
// The life of one intercepted call:
//
//  1. The kernel stops the calling thread and queues a notification on the
//     listener fd. A receiver, a goroutine locked to its OS thread and
//     blocked in SECCOMP_IOCTL_NOTIF_RECV (internal/notify/receiver.go), is woken on the
//     caller's CPU (SYNC_WAKE_UP) and receives it. Stopping wakes the
//     receivers with a call of our own (internal/notify/kick.go); where that cannot work
//     the loop polls the listener before each RECV instead.
//  2. The receiver reads the arguments the kernel will use (the sockaddr,
//     every msghdr of a sendmmsg) with process_vm_readv, or from
//     /proc/TID/mem where a seccomp profile refuses that, mirroring the
//     kernel's own checks so that a bad pointer or length gets the errno
//     the kernel would give.
//  3. It checks SECCOMP_IOCTL_NOTIF_ID_VALID: if the thread left the call
//     (a signal, Go's SIGURG preemption, death) what was read may belong to
//     another task, and the notification is dropped.
//  4. What the decision needs beyond the target's memory is learnt from
//     the kernel, for the kinds of call that need it (internal/decode): the
//     namespace a netlink socket, an ioctl, a netfilter setsockopt or a
//     bpf(2) acts on, the request of a netlink send, whom a cross-process
//     call reaches. The Call is then plain data: the Decider never reads
//     /proc nor holds a descriptor. Who called and the socket's type,
//     which only audited calls need, come from Call.Task on first use.
//  5. The Decider answers: allow or an errno. A decision that keeps the
//     receiver past a millisecond or two passes the receiving to a new
//     receiver (the watchdog in internal/notify/receiver.go): other threads' calls never
//     wait behind a slow one.
//  6. An allowed connect or send is made by the supervisor itself
//     (internal/emulate): it borrows the target's socket with
//     pidfd_getfd, makes the call with the bytes it checked, and answers
//     with the result. Anything else allowed is answered CONTINUE (the
//     kernel runs the call). ENOENT from SEND means the target is gone:
//     normal. A netlink socket(2) in the namespace the command started in
//     may instead be answered with a socket the supervisor made on a
//     thread without capabilities (Answer.Capless; see internal/notify/netlink.go): the
//     kernel then refuses every change requested through it.
//
// # Engines
//
// That is the notify engine. Where a listener cannot be had (one is
// installed above nettrap already: EBUSY; or the kernel lacks user
// notification), the ptrace engine (internal/ptrace) confines instead, behind
// the same Start, Session and Decider: the filter returns
// SECCOMP_RET_TRACE, nettrap traces every confined process, and a call
// stopped for it is read (decode.ReadDests, Call.Decode), decided, emulated or
// redirected as above, then made to skip with its answer (orig_rax -1)
// or let run. Under a listener above, whose USER_NOTIF outranks TRACE on
// the calls it traps, every syscall stops at entry instead, which comes
// before seccomp. ChooseEngine (engine.go) picks one.
//
// Why emulate: a call answered CONTINUE is read again by the kernel, and
// another thread of the target can change the address in between (the
// CONTINUE race, see seccomp_unotify(2)), and so is the descriptor: a
// racing thread can dup2() an inet socket onto the number that was
// checked. So unix and netlink calls are made by the supervisor too
// (emuunix.go). Where pidfd_getfd is refused
// (kernel < 5.6, a container profile without CAP_SYS_PTRACE) every
// allowed call continues, unless Options.Emulate requires emulation.
package supervisor
