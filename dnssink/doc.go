// Package dnssink is the DNS sinkhole of "Blocked lookups name the name"
// (docs/checks.md#classes-by-address-only--nettrap-never-resolves-a-name):
// a server on loopback to which nettrap redirects a confined program's blocked DNS
// traffic, so that the denial can name what was looked up
// ("TXT _grpc_config.localhost") instead of only the nameserver, and so
// that resolvers fail fast on a REFUSED answer rather than time out. It
// never forwards anything anywhere and does not depend on the supervisor.
//
// Parse decodes a query (ID, first question's name and type, question
// count); Refused builds the answer. Listen opens the server on 127.0.0.1
// and, when present, [::1], UDP and TCP each. The supervisor, right after
// performing a redirected connect or send on its copy of the target's
// socket, learns that socket's local address (getsockname) and calls
// Expect with it; each query from that source then reaches the handler
// before it is answered. Queries from other sources go to Config.Stray.
//
// Decisions not spelled out by the brief:
//
//   - Every message whose header is readable and whose QR bit is clear gets
//     REFUSED, a malformed one too (with the questions that decode echoed,
//     possibly none): one answer code for everything keeps clients failing
//     the same way, and the fuzz tests check exactly that. A message whose
//     header is unreadable, or a response (QR set), gets no answer. Either
//     way the handler (or Stray) sees it, with Query.Err set.
//   - A message that is a query but asks nothing (QDCOUNT 0) is reported
//     with ErrNoQuestion. With QDCOUNT > 1, the first question names the
//     query; all questions that decode are echoed.
//   - Names are decoded here, not by dnsmessage, which rejects a label
//     holding a "." (a legal query) and passes control bytes through; the
//     name is shown escaped (RFC 1035 5.1), so it is always one printable
//     line, safe to put in a log line or a GitHub annotation. Raw UTF-8
//     (unencoded IDN) shows as \DDD escapes, as dig shows it.
//   - Each compression pointer must point before where the previous one
//     led (before the name, for the first), and a name may use at most 127
//     of them, so decoding always ends, and quickly.
//   - Refused decompresses the echoed questions but never makes the answer
//     larger than the query or 512 bytes, whichever is larger.
//   - TCP: each exchange (one frame read and its answer written) must end
//     within Config.IdleTimeout, a frame of length 0 is a malformed message
//     (reported, not answered, the connection stays open), a frame cut
//     short by EOF or the deadline is reported with ErrShort and ends the
//     connection. Connections beyond Config.MaxConns are closed on accept.
//   - Sources are matched after unmapping v4-mapped addresses and dropping
//     zones, so a v6 socket redirected to ::ffff:127.0.0.1 matches what the
//     IPv4 listener sees.
package dnssink
