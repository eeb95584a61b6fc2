// Package notify is the notify engine: the loop that receives the
// seccomp listener's notifications (SECCOMP_IOCTL_NOTIF_RECV), reads
// and decides each call (internal/decode, the Decider, internal/answer's
// shared answer path), and answers it: CONTINUE, an errno, or the result
// of the call made by the supervisor itself (internal/emulate).
//
// Receivers are goroutines locked to their threads, blocked in RECV
// (receiver.go) and woken on the caller's CPU with SYNC_WAKE_UP; a
// watchdog hands a slow decider's turn on (internal/ticker), so that
// no thread's call waits behind another's decision. Stopping wakes them
// with a call the filter traps, made from the thread that carries the
// filter (kick.go); where the filter does not trap it, the loop polls
// the listener before each RECV instead (loop.go). A netlink socket in
// the starting namespace may be answered with a capability-free one
// (netlink.go); descriptors are taken from the target with pidfd_getfd
// (emupidfd.go). The engine is started by package supervisor's Session,
// which owns the listener and the start-up both engines share.
package notify
