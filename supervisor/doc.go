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
//  4. The Decider answers: CONTINUE (the kernel runs the call) or an errno.
//     ENOENT from SEND means the target is gone: normal. A netlink
//     socket(2) in the namespace the command started in may instead be
//     answered with a socket the supervisor made on a thread without
//     capabilities (Answer.Capless; see netlink.go): the kernel then
//     refuses every change requested through it.
//
// Limits: an allowed call continues in the kernel, which reads the
// arguments again; another thread of the target could change them in
// between (the CONTINUE race, see seccomp_unotify(2)). The Decider
// interface leaves room to emulate allowed connects instead.
package supervisor
