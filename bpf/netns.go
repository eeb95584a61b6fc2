package bpf

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NetnsIoctl is one socket ioctl request that changes the network
// namespace of the socket it is issued on: routes, addresses, interface
// flags and names, ARP entries, bridges, bonds, tunnels. The kernel checks
// only the caller's CAP_NET_ADMIN for these, so a confined root could
// re-route an allowed destination. The filter hands exactly these requests
// to the supervisor; every other ioctl (TCGETS, FIONBIO, SIOCGIFINDEX, …)
// stays in the kernel.
type NetnsIoctl struct {
	Lo, Hi uint32 // an inclusive range of request numbers (Lo == Hi for one)
	Label  string
}

// NetnsIoctls are the mutating requests of the 0x89xx socket range
// (include/uapi/linux/sockios.h). Reads stay out of the list, except two
// "get" numbers that carry a sub-command which can create devices
// (SIOCGIFBR: the old bridge API; SIOCGIFVLAN: vlan_ioctl_handler takes
// ADD_VLAN_CMD through either number). SIOCETHTOOL is in whole: its
// sub-command (set or get) is in memory. The SIOCDEVPRIVATE range is the
// tunnels' (SIOCADDTUNNEL, …) and some drivers' own, and is in whole too.
var NetnsIoctls = []NetnsIoctl{
	{unix.SIOCADDRT, unix.SIOCADDRT, "SIOCADDRT"},
	{unix.SIOCDELRT, unix.SIOCDELRT, "SIOCDELRT"},
	{unix.SIOCRTMSG, unix.SIOCRTMSG, "SIOCRTMSG"},
	{unix.SIOCSIFLINK, unix.SIOCSIFLINK, "SIOCSIFLINK"},
	{unix.SIOCSIFFLAGS, unix.SIOCSIFFLAGS, "SIOCSIFFLAGS"},
	{unix.SIOCSIFADDR, unix.SIOCSIFADDR, "SIOCSIFADDR"},
	{unix.SIOCSIFDSTADDR, unix.SIOCSIFDSTADDR, "SIOCSIFDSTADDR"},
	{unix.SIOCSIFBRDADDR, unix.SIOCSIFBRDADDR, "SIOCSIFBRDADDR"},
	{unix.SIOCSIFNETMASK, unix.SIOCSIFNETMASK, "SIOCSIFNETMASK"},
	{unix.SIOCSIFMETRIC, unix.SIOCSIFMETRIC, "SIOCSIFMETRIC"},
	{unix.SIOCSIFMEM, unix.SIOCSIFMEM, "SIOCSIFMEM"},
	{unix.SIOCSIFMTU, unix.SIOCSIFMTU, "SIOCSIFMTU"},
	{unix.SIOCSIFNAME, unix.SIOCSIFNAME, "SIOCSIFNAME"},
	{unix.SIOCSIFHWADDR, unix.SIOCSIFHWADDR, "SIOCSIFHWADDR"},
	{unix.SIOCSIFENCAP, unix.SIOCSIFENCAP, "SIOCSIFENCAP"},
	{unix.SIOCSIFSLAVE, unix.SIOCSIFSLAVE, "SIOCSIFSLAVE"},
	{unix.SIOCADDMULTI, unix.SIOCADDMULTI, "SIOCADDMULTI"},
	{unix.SIOCDELMULTI, unix.SIOCDELMULTI, "SIOCDELMULTI"},
	{unix.SIOCSIFPFLAGS, unix.SIOCSIFPFLAGS, "SIOCSIFPFLAGS"},
	{unix.SIOCDIFADDR, unix.SIOCDIFADDR, "SIOCDIFADDR"},
	{unix.SIOCSIFHWBROADCAST, unix.SIOCSIFHWBROADCAST, "SIOCSIFHWBROADCAST"},
	{unix.SIOCGIFBR, unix.SIOCGIFBR, "SIOCGIFBR"},
	{unix.SIOCSIFBR, unix.SIOCSIFBR, "SIOCSIFBR"},
	{unix.SIOCSIFTXQLEN, unix.SIOCSIFTXQLEN, "SIOCSIFTXQLEN"},
	{unix.SIOCETHTOOL, unix.SIOCETHTOOL, "SIOCETHTOOL"},
	{unix.SIOCSMIIREG, unix.SIOCSMIIREG, "SIOCSMIIREG"},
	{unix.SIOCWANDEV, unix.SIOCWANDEV, "SIOCWANDEV"},
	{unix.SIOCDARP, unix.SIOCDARP, "SIOCDARP"},
	{unix.SIOCSARP, unix.SIOCSARP, "SIOCSARP"},
	{unix.SIOCDRARP, unix.SIOCDRARP, "SIOCDRARP"},
	{unix.SIOCSRARP, unix.SIOCSRARP, "SIOCSRARP"},
	{unix.SIOCSIFMAP, unix.SIOCSIFMAP, "SIOCSIFMAP"},
	{unix.SIOCADDDLCI, unix.SIOCADDDLCI, "SIOCADDDLCI"},
	{unix.SIOCDELDLCI, unix.SIOCDELDLCI, "SIOCDELDLCI"},
	{unix.SIOCGIFVLAN, unix.SIOCGIFVLAN, "SIOCGIFVLAN"},
	{unix.SIOCSIFVLAN, unix.SIOCSIFVLAN, "SIOCSIFVLAN"},
	{unix.SIOCBONDENSLAVE, unix.SIOCBONDENSLAVE, "SIOCBONDENSLAVE"},
	{unix.SIOCBONDRELEASE, unix.SIOCBONDRELEASE, "SIOCBONDRELEASE"},
	{unix.SIOCBONDSETHWADDR, unix.SIOCBONDSETHWADDR, "SIOCBONDSETHWADDR"},
	{unix.SIOCBONDCHANGEACTIVE, unix.SIOCBONDCHANGEACTIVE, "SIOCBONDCHANGEACTIVE"},
	{unix.SIOCBRADDBR, unix.SIOCBRADDBR, "SIOCBRADDBR"},
	{unix.SIOCBRDELBR, unix.SIOCBRDELBR, "SIOCBRDELBR"},
	{unix.SIOCBRADDIF, unix.SIOCBRADDIF, "SIOCBRADDIF"},
	{unix.SIOCBRDELIF, unix.SIOCBRDELIF, "SIOCBRDELIF"},
	{unix.SIOCSHWTSTAMP, unix.SIOCSHWTSTAMP, "SIOCSHWTSTAMP"},
	{unix.SIOCDEVPRIVATE, unix.SIOCDEVPRIVATE + 15, "SIOCDEVPRIVATE"},
}

// LookupNetnsIoctl names a trapped request ("SIOCADDRT",
// "SIOCDEVPRIVATE+1"); ok is false for any other. Only the low 32 bits of
// the register count: the kernel's cmd is an unsigned int.
func LookupNetnsIoctl(req uint64) (string, bool) {
	r := uint32(req)
	for _, io := range NetnsIoctls {
		if r >= io.Lo && r <= io.Hi {
			if io.Lo == io.Hi {
				return io.Label, true
			}
			return fmt.Sprintf("%s+%d", io.Label, r-io.Lo), true
		}
	}
	return "", false
}

// ioctlRanges merges NetnsIoctls into maximal runs of consecutive request
// numbers, in ascending order, for the filter's comparisons.
func ioctlRanges() [][2]uint32 {
	var out [][2]uint32
	for _, io := range NetnsIoctls {
		if n := len(out); n > 0 && out[n-1][1]+1 == io.Lo {
			out[n-1][1] = io.Hi
			continue
		}
		out = append(out, [2]uint32{io.Lo, io.Hi})
	}
	return out
}

// BPFAttachCmds are the bpf(2) commands that attach a program: the filter
// hands these to the supervisor, which reads the attach type. Every other
// command (BPF_MAP_CREATE, BPF_PROG_LOAD, map lookups, …) stays in the
// kernel.
var BPFAttachCmds = []uint32{unix.BPF_PROG_ATTACH, unix.BPF_LINK_CREATE}

// AttachScope says where an attach type is denied.
type AttachScope int

const (
	// AttachAllowed: the program cannot change where a send goes
	// (cgroup skb verdicts, devices, sysctl, tracing, LSM, …).
	AttachAllowed AttachScope = iota
	// AttachAlways: denied whatever namespace the caller is in. Cgroup
	// hooks are not bound to a network namespace, and the sk_lookup and
	// flow dissector links name their namespace by a descriptor, which
	// may be nettrap's own.
	AttachAlways
	// AttachStartingNetns: the hook is bound to the caller's own network
	// namespace (an interface index, or the namespace itself): denied in
	// the namespace nettrap started in only.
	AttachStartingNetns
)

// attachTypes are the attach types that are not AttachAllowed, with
// their names for messages.
var attachTypes = map[uint32]struct {
	name  string
	scope AttachScope
}{
	// The cgroup sock_addr hooks rewrite the address (and port) of a
	// bind, connect, sendmsg, recvmsg or getpeername/getsockname: a
	// connect to 127.0.0.2 can go to 203.0.113.7. The unix ones can turn
	// a path into a name service daemon's socket.
	unix.BPF_CGROUP_INET4_BIND:        {"BPF_CGROUP_INET4_BIND", AttachAlways},
	unix.BPF_CGROUP_INET6_BIND:        {"BPF_CGROUP_INET6_BIND", AttachAlways},
	unix.BPF_CGROUP_INET4_CONNECT:     {"BPF_CGROUP_INET4_CONNECT", AttachAlways},
	unix.BPF_CGROUP_INET6_CONNECT:     {"BPF_CGROUP_INET6_CONNECT", AttachAlways},
	unix.BPF_CGROUP_INET4_POST_BIND:   {"BPF_CGROUP_INET4_POST_BIND", AttachAlways},
	unix.BPF_CGROUP_INET6_POST_BIND:   {"BPF_CGROUP_INET6_POST_BIND", AttachAlways},
	unix.BPF_CGROUP_UDP4_SENDMSG:      {"BPF_CGROUP_UDP4_SENDMSG", AttachAlways},
	unix.BPF_CGROUP_UDP6_SENDMSG:      {"BPF_CGROUP_UDP6_SENDMSG", AttachAlways},
	unix.BPF_CGROUP_UDP4_RECVMSG:      {"BPF_CGROUP_UDP4_RECVMSG", AttachAlways},
	unix.BPF_CGROUP_UDP6_RECVMSG:      {"BPF_CGROUP_UDP6_RECVMSG", AttachAlways},
	unix.BPF_CGROUP_INET4_GETPEERNAME: {"BPF_CGROUP_INET4_GETPEERNAME", AttachAlways},
	unix.BPF_CGROUP_INET6_GETPEERNAME: {"BPF_CGROUP_INET6_GETPEERNAME", AttachAlways},
	unix.BPF_CGROUP_INET4_GETSOCKNAME: {"BPF_CGROUP_INET4_GETSOCKNAME", AttachAlways},
	unix.BPF_CGROUP_INET6_GETSOCKNAME: {"BPF_CGROUP_INET6_GETSOCKNAME", AttachAlways},
	attachCgroupUnixConnect:           {"BPF_CGROUP_UNIX_CONNECT", AttachAlways},
	attachCgroupUnixConnect + 1:       {"BPF_CGROUP_UNIX_SENDMSG", AttachAlways},
	attachCgroupUnixConnect + 2:       {"BPF_CGROUP_UNIX_RECVMSG", AttachAlways},
	attachCgroupUnixConnect + 3:       {"BPF_CGROUP_UNIX_GETPEERNAME", AttachAlways},
	attachCgroupUnixConnect + 4:       {"BPF_CGROUP_UNIX_GETSOCKNAME", AttachAlways},
	// A socket-creation hook can set the socket's bound device (a pin);
	// sock_ops and cgroup setsockopt programs set or rewrite socket
	// options after seccomp has seen the call.
	unix.BPF_CGROUP_INET_SOCK_CREATE: {"BPF_CGROUP_INET_SOCK_CREATE", AttachAlways},
	unix.BPF_CGROUP_SOCK_OPS:         {"BPF_CGROUP_SOCK_OPS", AttachAlways},
	unix.BPF_CGROUP_SETSOCKOPT:       {"BPF_CGROUP_SETSOCKOPT", AttachAlways},
	unix.BPF_CGROUP_GETSOCKOPT:       {"BPF_CGROUP_GETSOCKOPT", AttachAlways},
	// Sockmap verdicts redirect data between sockets.
	unix.BPF_SK_SKB_STREAM_PARSER:  {"BPF_SK_SKB_STREAM_PARSER", AttachAlways},
	unix.BPF_SK_SKB_STREAM_VERDICT: {"BPF_SK_SKB_STREAM_VERDICT", AttachAlways},
	unix.BPF_SK_SKB_VERDICT:        {"BPF_SK_SKB_VERDICT", AttachAlways},
	unix.BPF_SK_MSG_VERDICT:        {"BPF_SK_MSG_VERDICT", AttachAlways},
	// Netns links by descriptor: sk_lookup steers incoming connections
	// to another socket, the flow dissector shapes hashing and steering.
	unix.BPF_SK_LOOKUP:      {"BPF_SK_LOOKUP", AttachAlways},
	unix.BPF_FLOW_DISSECTOR: {"BPF_FLOW_DISSECTOR", AttachAlways},
	// Bound to an interface or a netfilter hook of the caller's own
	// namespace: they can rewrite and redirect every packet.
	unix.BPF_XDP:            {"BPF_XDP", AttachStartingNetns},
	unix.BPF_TCX_INGRESS:    {"BPF_TCX_INGRESS", AttachStartingNetns},
	unix.BPF_TCX_EGRESS:     {"BPF_TCX_EGRESS", AttachStartingNetns},
	unix.BPF_NETFILTER:      {"BPF_NETFILTER", AttachStartingNetns},
	attachNetkitPrimary:     {"BPF_NETKIT_PRIMARY", AttachStartingNetns},
	attachNetkitPrimary + 1: {"BPF_NETKIT_PEER", AttachStartingNetns},
}

// Attach types newer than x/sys's table (include/uapi/linux/bpf.h).
const (
	attachCgroupUnixConnect = unix.BPF_TRACE_UPROBE_MULTI + 1 // 49..53: UNIX_CONNECT … UNIX_GETSOCKNAME
	attachNetkitPrimary     = attachCgroupUnixConnect + 5     // 54, then BPF_NETKIT_PEER
)

// LookupAttachType names a bpf attach type and says where it is denied.
func LookupAttachType(t uint32) (string, AttachScope) {
	if a, ok := attachTypes[t]; ok {
		return a.name, a.scope
	}
	return fmt.Sprintf("attach type %d", t), AttachAllowed
}

// BPFCmdName names a bpf(2) command the filter traps.
func BPFCmdName(cmd uint64) string {
	switch uint32(cmd) {
	case unix.BPF_PROG_ATTACH:
		return "BPF_PROG_ATTACH"
	case unix.BPF_LINK_CREATE:
		return "BPF_LINK_CREATE"
	}
	return fmt.Sprintf("bpf command %d", uint32(cmd))
}
