// Package inherit deals with the sockets a command would inherit from
// nettrap (CloseSockets).
//
// Sockets inherited from whoever started nettrap reach the network with
// no call for the filter to see: a shell's `exec 3<>/dev/tcp/host/80`
// followed by `nettrap -- sh -c 'echo x >&3'` writes to that host. So
// before the command starts:
//
//   - an inherited descriptor that would pass to it (not close-on-exec)
//     and is a socket of any family but unix and netlink is closed, with a
//     one-line notice naming it and its peer. Closing, not failing: CI
//     runners and daemons often leak descriptors into their jobs, and the
//     job does not need them. Pipes and files (make's jobserver) pass
//     untouched;
//   - a network socket given as the command's stdin, stdout or stderr, or
//     in ExtraFiles, cannot be closed without breaking the command: Start
//     refuses to run it, naming the descriptor and its peer.
package inherit
