package decode

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/sockopt"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// Call is one intercepted syscall as the engines hold it: the decoded
// Call a decider sees, and what the engine, the decoder and the
// emulator keep beside it.
type Call struct {
	decision.Call

	// Msgs are the bytes the decision was made on (address, control
	// data) and where each payload lies, for an emulated call: the kernel
	// must not read the address a second time (supervisor/emulate.go).
	Msgs []RawMsg
	// Opt is a trapped setsockopt's value as read (supervisor/emuopt.go).
	Opt sockopt.Value
	// PidfdTarget is the process a pidfd_getfd's pidfd named when it
	// was decided (supervisor/emupidfd.go).
	PidfdTarget int

	// Holder is the engine that holds the caller stopped in the call.
	Holder Holder
	Netns  *namespace.Starting
	// Emulating: allowed calls are made by nettrap (an emulator runs).
	Emulating bool
	// InTree: the decision allowed the call as one in a namespace of the
	// tree's (Task.TreeNetns said yes): nettrap must make it itself, on
	// a socket it checks again.
	InTree bool
	// Peer: the decision asks that the call reach only a socket of the
	// confined tree (supervisor/peer.go); set by the loop from the answer.
	Peer    *decision.PeerCheck
	Netlink *NetlinkSend // the messages of a send addressed to AF_NETLINK
	// Unsignaled: the thread that serves the call blocks every signal
	// (a notify receiver's), so a blocking call the supervisor makes on
	// it is never interrupted.
	Unsignaled bool
	task       task // decision.Task, without an allocation of its own
	// dest1 and msg1 hold the one destination and message of a connect
	// or a sendto, without allocations of their own.
	dest1 [1]classify.Dest
	msg1  [1]RawMsg
	// name1 holds the address bytes of that one message; hdr1 a
	// sendmsg's header, ctl1 its control data if it fits (a GSO segment
	// size and a traffic class, as quic-go sends, take 40 bytes).
	name1 [sizeofSockaddrStorage]byte
	hdr1  [SizeofMmsghdr]byte
	ctl1  [64]byte
	// iov1 and riov1 hold a sendmsg's iovec array while its payload is
	// read with the rest (prefetchMsgPayload).
	iov1  [maxPrefetchIov * sizeofIovec]byte
	riov1 [maxPrefetchIov]unix.RemoteIovec
	mem   targetmem.Reader // Mem's
}

// Mem is a reader of the caller's memory, in c's own storage (no
// allocation per call); close it once the arguments are read.
func (c *Call) Mem(vm *atomic.Bool) *targetmem.Reader {
	return c.mem.Reset(uint32(c.TID)).UseVM(vm)
}

// Holder is what the decoder and the emulator ask of the engine that
// holds a call's thread stopped, whatever the engine: the
// engine-neutral view of a stopped call.
type Holder interface {
	// Pending tells whether c's thread still waits in c.
	Pending(c *Call) bool
	// AnswerEarly fails c with errno while the supervisor's own emulated
	// call runs on (supervisor/emuintr.go).
	AnswerEarly(c *Call, errno unix.Errno)
	// KeepsTID: the thread's id cannot be reused while the call is
	// undecided (a tracee's stays until its tracer reaps it, and the
	// tracer waits for the answer), so what was read of /proc/TID is the
	// caller's even if it left the call.
	KeepsTID() bool
	// HandIn puts socket fd (nettrap's) at the call's descriptor number
	// in the caller, in place of what is there, with newfdFlags
	// (O_CLOEXEC or 0): SECCOMP_IOCTL_NOTIF_ADDFD with SETFD. The call
	// is still to be answered. errors.ErrUnsupported where the engine
	// cannot (ptrace).
	HandIn(c *Call, fd int, newfdFlags uint32) error
}

// Pending tells whether the caller still waits in the call.
func (c *Call) Pending() bool { return c.Holder.Pending(c) }

// AnswerEarly fails the call with errno while the supervisor's own
// emulated call runs on (supervisor/emuintr.go).
func (c *Call) AnswerEarly(errno unix.Errno) { c.Holder.AnswerEarly(c, errno) }
