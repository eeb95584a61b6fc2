// Package supervisor starts a command confined by nettrap's seccomp filter
// and answers the kernel for every call the filter hands to user space.
//
// The life of one intercepted call:
//
//  1. The kernel stops the calling thread and queues a notification on the
//     listener fd. The loop polls the listener (RECV alone would block
//     forever once the last target is gone) and receives it.
//  2. The goroutine that received it (see loop.run) reads the arguments the kernel will use
//     (the sockaddr, every msghdr of a sendmmsg) from /proc/TID/mem,
//     mirroring the kernel's own checks so that a bad pointer or length
//     gets the errno the kernel would give.
//  3. It checks SECCOMP_IOCTL_NOTIF_ID_VALID: if the thread left the call
//     (a signal, Go's SIGURG preemption, death) what was read may belong to
//     another task, and the notification is dropped.
//  4. What the decision needs beyond the target's memory is learnt from
//     the kernel, for the kinds of call that need it (decode.go): the
//     namespace a netlink socket, an ioctl, a netfilter setsockopt or a
//     bpf(2) acts on, the request of a netlink send, whom a cross-process
//     call reaches. The Call is then plain data: the Decider never reads
//     /proc nor holds a descriptor. Who called and the socket's type,
//     which only audited calls need, come from Call.Task on first use.
//  5. The Decider answers: allow or an errno.
//  6. An allowed connect or send on an inet socket is made by the
//     supervisor itself (emulate.go): it borrows the target's socket with
//     pidfd_getfd, makes the call with the bytes it checked, and answers
//     with the result. Anything else allowed is answered CONTINUE (the
//     kernel runs the call). ENOENT from SEND means the target is gone:
//     normal. A netlink socket(2) in the namespace the command started in
//     may instead be answered with a socket the supervisor made on a
//     thread without capabilities (Answer.Capless; see netlink.go): the
//     kernel then refuses every change requested through it.
//
// Why emulate: a call answered CONTINUE is read again by the kernel, and
// another thread of the target can change the address in between (the
// CONTINUE race, see seccomp_unotify(2)). Unix and netlink sockets keep
// CONTINUE: their family cannot change, so a racing thread can only pick
// another address of an allowed class. Where pidfd_getfd is refused
// (kernel < 5.6, a container profile without CAP_SYS_PTRACE) every
// allowed call continues, unless Options.Emulate requires emulation.
package supervisor
