package supervisor

import (
	"bytes"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
)

// Call is one intercepted syscall with its arguments already read from
// the target. The target is stopped in the kernel until it is answered.
type Call struct {
	ID      uint64
	TID     int
	Syscall bpf.Call
	Args    [6]uint64
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
	// Request names a trapped ioctl request ("SIOCADDRT").
	Request string
	// AttachType is the attach_type of a bpf(2) BPF_PROG_ATTACH or
	// BPF_LINK_CREATE (the same offset in both).
	AttachType uint32
	// Err is set when the arguments could not be read or are malformed:
	// the call must then fail with this errno, as the kernel would.
	Err unix.Errno

	// msgs are the bytes the decision was made on (address, control
	// data) and where each payload lies, for an emulated call: the kernel
	// must not read the address a second time (emulate.go).
	msgs []rawMsg

	listener   int
	netns      *startingNetns
	netlink    *netlinkSend // the messages of a send addressed to AF_NETLINK
	callerOnce sync.Once
	caller     Caller
	sockOnce   sync.Once
	sock       string
}

// Caller says who made a call. Read from /proc on first use only, since
// allowed calls never need it.
type Caller struct {
	PID   int // thread group id
	TID   int
	Exe   string
	Argv0 string
	Argv  []string
	Gone  bool // the task went away (or its pid was reused) while looking
}

// Valid reports whether the call is still pending: the thread still waits
// in it. A decider that waits for something (a test's output to drain) can
// poll it to give up on a target that died.
func (c *Call) Valid() bool { return idValid(c.listener, c.ID) }

// Caller reads who made the call. It is only called for calls that are
// audited, so the cost stays off the allowed path.
func (c *Call) Caller() Caller {
	c.callerOnce.Do(func() {
		c.caller = readCaller(c.TID)
		if !idValid(c.listener, c.ID) {
			c.caller.Gone = true
		}
	})
	return c.caller
}

// SockType names the socket the call acts on ("tcp", "udp", "unix-stream",
// …), or "" when it cannot be told. For socket(2) it is the type asked for.
func (c *Call) SockType() string {
	c.sockOnce.Do(func() {
		switch c.Syscall.Kind {
		case bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg:
			if !c.Syscall.Foreign {
				c.sock = socketType(c.Caller().PID, c.TID, int(int32(c.Args[0])))
			}
		case bpf.Socket:
			c.sock = socketTypeName(int(c.Args[0]), int(c.Args[1])&0xf, int(c.Args[2]))
		}
	})
	return c.sock
}

func readCaller(tid int) Caller {
	c := Caller{PID: tid, TID: tid}
	dir := "/proc/" + strconv.Itoa(tid)
	if st, err := os.ReadFile(dir + "/status"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
				if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					c.PID = pid
				}
				break
			}
		}
	} else {
		c.Gone = true
	}
	c.Exe, _ = os.Readlink(dir + "/exe")
	if cmdline, err := os.ReadFile(dir + "/cmdline"); err == nil {
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			c.Argv = append(c.Argv, string(a))
		}
	}
	if len(c.Argv) > 0 {
		c.Argv0 = c.Argv[0]
	}
	return c
}
