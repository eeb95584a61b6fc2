// Package lab builds a two-namespace network for the escape tests: an
// "inside" namespace whose default routes go over a veth pair to an
// "outside" namespace that owns documentation addresses ([Outside4],
// [Outside6]).
//
// Some ways round nettrap only show with a real interface: a send pinned to
// an interface, a source route, a multicast join, a raw frame. On lo alone
// they look harmless. In the lab the confined program runs inside, and
// whatever it gets out arrives at the outside, which records it twice:
//
//   - listeners on the outside's addresses log every TCP connection's data
//     and every UDP datagram ([Lab.ListenTCP], [Lab.ListenUDP]);
//   - a packet capture (AF_PACKET, in the outside namespace, which nettrap
//     does not confine) on the outside's end of the veth logs every frame
//     that arrives, for what carries no port: IGMP and MLD reports, frames
//     to martian destinations (127.0.0.2 or ::1 sent out of the veth),
//     source-routed packets, AF_XDP frames ([Lab.Frames]).
//
// Both namespaces are new and private to the test: the outside has no
// interface but its lo and its end of the veth, so nothing the inside sends
// can go further. They vanish with the lab (the namespaces are held by file
// descriptors only, and no process is left in them).
//
// The package does all of this from the test process itself: namespaces
// are entered by OS threads locked for the purpose, which then die, so no
// other goroutine ever runs in a lab namespace by accident. Programs are
// started inside with [Lab.Start], which forks from such a thread.
//
// [Programs] builds the lab's programs: escapee, the victim and nettrap
// with the go command (package victimbuild), the C programs of csrc/ with
// gcc (escape32 with -m32, on amd64 only). With NETTRAP_TEST_PREBUILT=DIR
// (package prebuilt) it takes them all from DIR instead, where one missing
// fails the test: scripts/kernels.sh runs the escape matrix so in guests
// that have neither go nor gcc.
package lab
