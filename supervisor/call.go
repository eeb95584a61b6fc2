package supervisor

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/procfs"
)

// Call is one intercepted syscall, decoded: every argument a decision
// needs is a plain field, read from the target's memory (read.go) or
// learnt from the kernel (decode.go) before the decider sees it. What is
// costly to learn and needed only for audited calls (who called, the
// socket's type) comes from Task. The target is stopped in the kernel
// until the call is answered.
type Call struct {
	ID      uint64
	TID     int
	Syscall bpf.Call
	// Args are the raw arguments; deciders use the decoded fields.
	Args [6]uint64
	// Dests are the destinations the call names: one for connect and
	// sendto, one for a sendmsg with a msg_name, one per named message of
	// a sendmmsg. Empty when the call names none.
	Dests []classify.Dest
	// SourceRoute: a message carries an IPv4 source route (IP_RETOPTS) or
	// an IPv6 routing header in its control messages, or the call is a
	// setsockopt that sets one.
	SourceRoute bool
	// Pin names the interface, other than lo, that the call pins a socket
	// (setsockopt SO_BINDTODEVICE, SO_BINDTOIFINDEX, IP_UNICAST_IF,
	// IPV6_UNICAST_IF, IPV6_PKTINFO) or a message (an IP_PKTINFO or
	// IPV6_PKTINFO control message) to: "ifindex 2", or a quoted name.
	// Empty when it pins to nothing, or to lo.
	Pin string
	// Group is the multicast group (or IPv6 anycast address) a setsockopt
	// joins; GroupSource the source of a source-specific join. Invalid
	// when the call joins nothing.
	Group, GroupSource netip.Addr
	// Option is the C name of a trapped setsockopt option ("IP_UNICAST_IF").
	Option string
	// Netfilter: a setsockopt that writes a legacy netfilter table or an
	// IPVS service (Option names it) of the socket's namespace.
	Netfilter bool
	// Request names a trapped ioctl request ("SIOCADDRT") or the command
	// of a bpf(2) ("BPF_LINK_CREATE").
	Request string
	// AttachType is the attach_type of a bpf(2) BPF_PROG_ATTACH or
	// BPF_LINK_CREATE (the same offset in both).
	AttachType uint32
	// Socket is what a native socket(2) asks for.
	Socket SocketArgs
	// OtherNetns: the call acts on a network namespace other than the one
	// nettrap started the command in, which is then the test's own
	// business. Set for a socket(AF_NETLINK) and a bpf(2) (the calling
	// thread's namespace), a trapped ioctl and a netfilter setsockopt
	// (the socket's). False when it cannot be told: the strict answer.
	OtherNetns bool
	// NetlinkOurs: the call sends netlink messages that name a
	// destination, on a socket of the starting namespace; NetlinkChange
	// names the first request among them that changes that namespace
	// ("RTM_NEWROUTE", "nfnetlink message …"), "" when none does.
	NetlinkOurs   bool
	NetlinkChange string
	// OwnDescendant, for ptrace, process_vm_writev and pidfd_getfd: the
	// process the call reaches into is a descendant of the caller (or, for
	// pidfd_getfd, the caller itself), in the caller's pid namespace.
	OwnDescendant bool
	// Err is set when the arguments could not be read or are malformed:
	// the call must then fail with this errno, as the kernel would.
	Err unix.Errno
	// Task tells what is costly to learn of the caller, when a decision
	// asks. Never nil in a call from the supervisor.
	Task Task

	// msgs are the bytes the decision was made on (address, control
	// data) and where each payload lies, for an emulated call: the kernel
	// must not read the address a second time (emulate.go).
	msgs []rawMsg
	// opt is a trapped setsockopt's value as read (emuopt.go).
	opt optValue
	// pidfdTarget is the process a pidfd_getfd's pidfd named when it
	// was decided (emupidfd.go).
	pidfdTarget int

	listener int
	tracer   *tracer // the ptrace engine's, which made the call; nil under notify
	netns    *startingNetns
	// emulating: allowed calls are made by nettrap (an emulator runs).
	emulating bool
	// inTree: the decision allowed the call as one in a namespace of the
	// tree's (Task.TreeNetns said yes): nettrap must make it itself, on
	// a socket it checks again.
	inTree bool
	// peer: the decision asks that the call reach only a socket of the
	// confined tree (peer.go); set by the loop from the answer.
	peer    *PeerCheck
	netlink *netlinkSend // the messages of a send addressed to AF_NETLINK
	task    task         // Task, without an allocation of its own
	sock    borrowed     // the socket an emulated call borrows (emusock.go)
	// dest1 and msg1 hold the one destination and message of a connect
	// or a sendto, without allocations of their own.
	dest1 [1]classify.Dest
	msg1  [1]rawMsg
}

// SocketArgs are the arguments of socket(2): Type without its flags
// (SOCK_NONBLOCK, SOCK_CLOEXEC).
type SocketArgs struct {
	Domain, Type, Protocol int
}

// Task is what a decider may ask about the task that made a call, at a
// cost: /proc reads, a borrowed descriptor. Allowed calls never ask, so
// the cost stays off their path. The supervisor's answers come from the
// kernel; a decider's tests use FixedTask.
type Task interface {
	// Caller says who made the call.
	Caller() Caller
	// SockType names the socket the call acts on ("tcp", "udp",
	// "unix-stream", …), or "" when it cannot be told. For socket(2) it
	// is the type asked for.
	SockType() string
	// PathExists tells whether path exists as the caller sees it (its
	// root, its working directory); yes when it cannot be told.
	PathExists(path string) bool
	// Pending reports whether the call is still pending: the thread still
	// waits in it. A decider that waits for something (a test's output
	// to drain) can poll it to give up on a target that died.
	Pending() bool
	// TreeNetns tells whether the call acts in a network namespace the
	// confined tree made (docs/threat-model.md, "Namespaces the test makes"): a
	// connect's or send's socket is of one (and nettrap makes the call
	// itself), or a socket(2) caller is in one. No when it cannot be
	// told.
	TreeNetns() bool
}

// Caller says who made a call.
type Caller struct {
	PID   int // thread group id
	TID   int
	Exe   string
	Argv0 string
	Argv  []string
	Gone  bool // the task went away (or its pid was reused) while looking
}

// FixedTask is a Task with fixed answers, for deciders' tests: they run
// without a kernel, a /proc or a descriptor.
type FixedTask struct {
	Process Caller
	Sock    string
	// Missing are the paths that do not exist for the caller.
	Missing []string
	// Tree: the call acts in a network namespace the tree made.
	Tree bool
}

// Caller returns t.Process.
func (t FixedTask) Caller() Caller { return t.Process }

// SockType returns t.Sock.
func (t FixedTask) SockType() string { return t.Sock }

// PathExists tells whether path is not one of t.Missing.
func (t FixedTask) PathExists(path string) bool {
	for _, m := range t.Missing {
		if m == path {
			return false
		}
	}
	return true
}

// Pending is true until the process is gone.
func (t FixedTask) Pending() bool { return !t.Process.Gone }

// TreeNetns returns t.Tree.
func (t FixedTask) TreeNetns() bool { return t.Tree }

// pending tells whether the caller still waits in the call. A traced
// caller stays in its stop until the tracer resumes it: it waits while
// it exists.
func (c *Call) pending() bool {
	if c.tracer != nil {
		return procfs.Running(c.TID) // a SIGKILLed one is a zombie at once
	}
	return idValid(c.listener, c.ID)
}

// answerEarly fails the call with errno while the supervisor's own
// emulated call runs on (emuintr.go). Under the ptrace engine the call
// is skipped, so the kernel's restart code never sees it: ERESTARTSYS
// would reach user space, and EINTR is answered instead.
func (c *Call) answerEarly(errno unix.Errno) {
	if c.tracer != nil {
		if errno == errRestartSys {
			errno = unix.EINTR
		}
		ret := -int64(errno)
		c.tracer.post(traceAnswer{tid: c.TID, id: c.ID, ret: &ret, early: true})
		return
	}
	sendResp(c.listener, &notifResp{ID: c.ID, Error: -int32(errno)})
}
