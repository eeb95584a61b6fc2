package answer

import "sync/atomic"

// Stats counts what the loop did.
type Stats struct {
	Notifications atomic.Uint64 // received from the kernel
	Allowed       atomic.Uint64
	Denied        atomic.Uint64
	Vanished      atomic.Uint64 // the target left the call before the answer (ENOENT)
	Emulated      atomic.Uint64 // allowed calls the supervisor made itself (emulate.go)
	// Replayed counts restarted calls answered with the answer their
	// first try lost, not made again (notify/restart.go).
	Replayed atomic.Uint64
	// CaplessNetlink counts the netlink sockets handed over, and netlink
	// sends made, without capabilities (also counted in Allowed).
	CaplessNetlink atomic.Uint64
}
