// Package sockdiag asks the kernel about sockets for the supervisor:
// socket diagnostics (NETLINK_SOCK_DIAG: which unix sockets listen or
// receive, their names and socket files, which inet sockets take a
// loopback destination), and what kind of socket a target's descriptor
// is (SocketType). It holds no state and makes no decision.
package sockdiag
