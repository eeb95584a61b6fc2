package decision

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
)

// Call is one intercepted syscall, decoded: every argument a decision
// needs is a plain field, read from the target's memory or learnt from
// the kernel by the engine's decoder before the decider sees it. What is
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
