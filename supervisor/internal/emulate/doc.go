// Package emulate makes allowed calls itself (Emulator), for both
// engines: it borrows the target's socket with pidfd_getfd (Borrow,
// through a pidfd cache), makes the connect, send or setsockopt with the
// bytes the decision was made on (so the kernel never reads the target's
// address or descriptor again), answers the caller early when a signal
// takes it out of a call that blocks, watches such calls, makes unix
// calls as the caller would, checks the peers of --sealed (Tree), and
// makes a denied call to its stand-in (Redirect). Call is an intercepted
// call as the engines and the emulator hold it: the decoded call and the
// socket it borrows.
package emulate
