// Package fakehost serves fake "remote" hosts inside the test sandbox: TCP
// listeners and UDP sockets on the sandbox's lo addresses that record every
// connection and datagram (local address aimed at, remote address, protocol,
// first bytes). Port 53 endpoints also answer DNS queries: every A question
// gets [DNSAnswerV4], every other question an empty NOERROR answer.
//
// A test that runs a program WITHOUT nettrap and sees it recorded here has
// proved that the operation really reaches the network; with nettrap in
// front, no record may appear. [Start] requires the sandbox (see package
// sandbox), so no fake host can ever stand in front of a real network.
//
// Every check is made from a [Cursor] taken before the action it is about
// ([Host.Mark]), so a host shared between checks (subtests, or two checks
// of the same endpoint) never lets one check's records satisfy or fail
// another. "Nothing arrived" is proved with [Host.Arrived]: it sends a
// sentinel carrying a token no other probe uses, waits for that very
// sentinel, and reports every other record aimed at the endpoint since the
// cursor.
package fakehost
