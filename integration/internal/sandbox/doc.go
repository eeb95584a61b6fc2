// Package sandbox puts a whole test binary into a private network namespace
// (and a private mount namespace) before any test runs.
//
// Call [Main] from TestMain. It re-executes the test binary with the same
// arguments in new namespaces (plus a user namespace when not root), and
// inside them it:
//
//   - makes every mount private, so nothing it mounts reaches the host;
//   - brings up lo, the only interface there, and puts the documentation,
//     private, CGNAT and link-local addresses of [Addrs] on it, so that tests
//     can aim at "external" destinations that are really served by local fake
//     listeners (see package fakehost);
//   - routes multicast and limited broadcast to lo, so a send that a broken
//     guard lets through shows up as a datagram instead of ENETUNREACH;
//   - routes [BlackholeAddr] into lo without owning it, so a connect to it
//     blocks in the kernel with no answer;
//   - bind-mounts a generated resolv.conf naming only [Nameservers] over
//     /etc/resolv.conf, so no resolver can ever aim at the machine's real
//     nameserver.
//
// Because the whole test process — and every process it starts, nettrap and
// the victims included — lives in that namespace, whose only interface is
// lo, nothing the tests send can leave the machine: there is no route out.
//
// When the namespaces cannot be created, the tests still run, but every test
// that calls [Require] skips with the reason (or fails when CI=true).
package sandbox
