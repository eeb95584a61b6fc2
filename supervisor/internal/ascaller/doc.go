// Package ascaller makes unix calls as the caller would make them: from
// its working directory and root, with its credentials (Pool, Ctx).
//
// A unix connect or send is checked by the kernel against the caller: a
// path name resolves against its working directory and root (in its
// mount namespace), the socket inode must be writable with its
// credentials, and a stream connect records its credentials as the
// peer's (SO_PEERCRED), a send attaches them for a receiver with
// SO_PASSCRED. So such a call, made by nettrap for a target
// (supervisor/emuunix.go), runs on a caller thread: an OS thread locked
// to its goroutine and never unlocked (it dies with the goroutine), that unshared its fs_struct
// (CLONE_FS) and, per call, changes its working directory to the
// caller's, its root to the caller's where that differs from nettrap's
// (chroot, CAP_SYS_CHROOT), and its credentials to the caller's where
// they differ: setgroups, setresgid, setresuid and capset made raw, which
// act on the calling thread alone (the libc and x/sys wrappers change
// every thread). The saved uid stays 0, so the thread can change back.
// Go never starts a new thread from a locked one (it asks its template
// thread), so nothing inherits a changed thread's state.
//
// Calls that may block (a full backlog, a full receive queue) keep their
// thread: a thread is started whenever none is idle, and at most
// idleCallers are kept afterwards.
package ascaller
