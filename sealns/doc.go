// Package sealns makes the network namespace --sealed runs the command
// in: a namespace of nettrap's own with only lo, up. Nothing in it leads
// out: the host's loopback, its abstract unix names and every real
// interface are out of reach by construction, so a local daemon or
// proxy on the host cannot be asked to reach the network, and most ways
// round the filter have nothing to act on.
//
// The namespace is made by nettrap on a thread of its own
// (unshare(CLONE_NEWNET), which needs CAP_SYS_ADMIN in nettrap's user
// namespace: root, or root of a user namespace), so its owner is
// nettrap's user namespace, not the command's: root in the command's
// user namespace (supervisor/userns.go) cannot change it. A thread that
// enters it (Do, Enter) is never handed back to the Go scheduler: it
// exits when its goroutine returns, so no other goroutine ever runs in
// the namespace by accident. Sockets keep the namespace they were made
// in, so nettrap can make the DNS sinkhole's sockets there (Do) and
// still serve them from any thread.
//
// What the command may reach outside (an --allow rule) is reached by
// nettrap from the namespace it started in and handed in
// (supervisor/internal/emulate/handin.go).
package sealns
