// Package netsem builds netsem, a C program that runs the scenarios of
// issue 9's emulation semantics on loopback listeners of its own and
// prints one deterministic line per result ("name: result"): errno names,
// byte counts, what the peer received, whether a signal handler ran.
//
// The integration tests run it bare, under nettrap --emulate=on and under
// --emulate=off, and compare the lines: emulated calls must behave as the
// kernel's own. C, because the scenarios need what Go's runtime hides:
// blocking sockets, signal handlers with and without SA_RESTART, the
// default SIGPIPE action, sendmmsg, control messages.
//
// Scenarios (csrc/*.c): blocking and non-blocking connect (EINPROGRESS,
// completion by poll and SO_ERROR, EISCONN, EALREADY), ECONNREFUSED,
// SO_SNDTIMEO against a full accept queue, a signal interrupting a
// blocking connect (EINTR, SA_RESTART), EPIPE with and without
// MSG_NOSIGNAL, TCP Fast Open sends (whole, 64 KiB, UIO_MAXIOV vectors,
// non-blocking, partial under SO_SNDTIMEO), MSG_DONTWAIT, UDP with
// UDP_SEGMENT, IP_TOS/IPV6_TCLASS and PKTINFO control messages, the
// largest datagrams, UIO_MAXIOV, MSG_MORE, ICMP errors on a connected
// socket, sendmmsg stopping at a bad message, a slow connect beside a
// fast one, a process killed in a blocking connect. IPv4 and IPv6 where
// both exist.
//
// One line is not compared: "tell:" names where a thread blocked in
// connect waits (/proc/…/wchan), which shows whether nettrap made the call.
//
// The package also builds nopidfd, which runs a command where pidfd_getfd
// fails with EPERM (Docker's default seccomp profile without
// CAP_SYS_PTRACE), for nettrap's fallback without emulation.
//
// With NETTRAP_TEST_PREBUILT=DIR (package prebuilt) both are taken from DIR
// (netsem, nopidfd) instead of built with gcc; one missing there fails
// the test.
package netsem
