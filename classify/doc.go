// Package classify turns the raw sockaddr bytes that a confined process
// passed to connect(2), sendto(2), sendmsg(2) or sendmmsg(2) into a
// destination (Dest) and puts that destination into one of the classes of
// docs/checks.md#classes-by-address-only--nettrap-never-resolves-a-name
// (Class). It is pure: it never makes a syscall and never resolves a name;
// it judges addresses only.
//
// Parse reads the bytes exactly as the kernel would, so that what nettrap
// judges is what the kernel would act on:
//
//   - fewer than 2 bytes (no family) is ErrTruncated, more than
//     sizeof(sockaddr_storage) = 128 bytes is ErrTooLong; the supervisor
//     answers both with EINVAL, as the kernel would.
//   - AF_INET needs sizeof(sockaddr_in) = 16 bytes (tcp_v4_connect,
//     udp_sendmsg), AF_INET6 needs SIN6_LEN_RFC2133 = 24 bytes; the scope id
//     (bytes 24..28) becomes the address zone when present and nonzero.
//   - AF_UNIX: 2 bytes is an unnamed address; a path stops at its first NUL
//     (sun_path need not be terminated); a leading NUL makes the rest of the
//     bytes an abstract name, NULs included. More than sizeof(sockaddr_un) =
//     110 bytes is ErrTooLong (unix_validate_addr answers EINVAL).
//   - AF_NETLINK needs sizeof(sockaddr_nl) = 12 bytes.
//   - AF_UNSPEC depends on the operation. connect(AF_UNSPEC) dissolves an
//     association (inet_stream_connect, inet_dgram_connect, netlink_connect
//     call ->disconnect): there is no destination. For a send, udp_sendmsg,
//     raw_sendmsg and l2tp_ip_sendmsg read an AF_UNSPEC sockaddr of at least
//     16 bytes as a sockaddr_in, and rawv6_sendmsg and l2tp_ip6_sendmsg read
//     one of at least 24 bytes as a sockaddr_in6. Treating that as "no
//     destination" would be an escape, so Parse reads the bytes as the
//     address the kernel may use (see ParseIn for the socket family).
//
// Classification (Resolvers.Classify) checks DNS first (port 53 of a
// resolv.conf nameserver or of a well-known stub, or a resolver unix socket),
// then the address ranges. A v4-mapped IPv6 address (::ffff:a.b.c.d) is
// judged as the IPv4 address it carries, because that is where the kernel
// sends it. Decisions not spelled out by that page's table:
//
//   - 0.0.0.0 alone is Unspecified; the rest of 0.0.0.0/8 is External (the
//     kernel does not route it to loopback; it may leave the machine).
//   - 240.0.0.0/4 other than 255.255.255.255, v4-compatible ::a.b.c.d,
//     NAT64 64:ff9b::/96, site-local fec0::/10 and every other range not
//     listed in the table are External.
//   - Resolver sockets are matched after filepath.Clean, after removing a
//     /proc/<pid|self|thread-self>/root prefix and with /var/run read as
//     /run. A relative path cannot be resolved here; it matches a resolver
//     socket whose path ends in it (fail closed). Dest.InDir resolves it
//     against the target's working directory when the caller knows it.
//     Symlinks cannot be seen from bytes alone; this check is best effort.
package classify
