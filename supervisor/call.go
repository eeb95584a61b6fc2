package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/sockopt"
)

// call is one intercepted syscall as the engines hold it: the decoded
// Call a decider sees, and what the engine, the decoder and the
// emulator keep beside it.
type call struct {
	decision.Call

	// msgs are the bytes the decision was made on (address, control
	// data) and where each payload lies, for an emulated call: the kernel
	// must not read the address a second time (emulate.go).
	msgs []rawMsg
	// opt is a trapped setsockopt's value as read (emuopt.go).
	opt sockopt.Value
	// pidfdTarget is the process a pidfd_getfd's pidfd named when it
	// was decided (emupidfd.go).
	pidfdTarget int

	// holder is the engine that holds the caller stopped in the call.
	holder holder
	netns  *namespace.Starting
	// emulating: allowed calls are made by nettrap (an emulator runs).
	emulating bool
	// inTree: the decision allowed the call as one in a namespace of the
	// tree's (Task.TreeNetns said yes): nettrap must make it itself, on
	// a socket it checks again.
	inTree bool
	// peer: the decision asks that the call reach only a socket of the
	// confined tree (peer.go); set by the loop from the answer.
	peer    *decision.PeerCheck
	netlink *netlinkSend // the messages of a send addressed to AF_NETLINK
	task    task         // decision.Task, without an allocation of its own
	sock    borrowed     // the socket an emulated call borrows (emusock.go)
	// dest1 and msg1 hold the one destination and message of a connect
	// or a sendto, without allocations of their own.
	dest1 [1]classify.Dest
	msg1  [1]rawMsg
}

// holder is what the decoder and the emulator ask of the engine that
// holds a call's thread stopped, whatever the engine: the
// engine-neutral view of a stopped call.
type holder interface {
	// pending tells whether c's thread still waits in c.
	pending(c *call) bool
	// answerEarly fails c with errno while the supervisor's own emulated
	// call runs on (emuintr.go).
	answerEarly(c *call, errno unix.Errno)
	// keepsTID: the thread's id cannot be reused while the call is
	// undecided (a tracee's stays until its tracer reaps it, and the
	// tracer waits for the answer), so what was read of /proc/TID is the
	// caller's even if it left the call.
	keepsTID() bool
}

// pending tells whether the caller still waits in the call.
func (c *call) pending() bool { return c.holder.pending(c) }

// answerEarly fails the call with errno while the supervisor's own
// emulated call runs on (emuintr.go).
func (c *call) answerEarly(errno unix.Errno) { c.holder.answerEarly(c, errno) }
