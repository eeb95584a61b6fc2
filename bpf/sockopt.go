package bpf

import "golang.org/x/sys/unix"

// SockOpt is one setsockopt(2) option the filter hands to the supervisor.
// Every other option (SO_REUSEADDR, TCP_NODELAY, IP_TOS, …) is decided by
// the filter alone and never leaves the kernel.
type SockOpt struct {
	Level, Name uint32
	Label       string // the option's C name, for messages and the audit trail
	Effect      OptEffect
	// Last, when above Name, makes the entry the range Name..Last (the
	// IPVS commands); Label then names the range.
	Last uint32
}

// OptEffect says why an option is trapped: what it changes about where a
// packet goes.
type OptEffect int

const (
	// SourceRouteOpt: an IPv4 source route or IPv6 routing header, which
	// sends the packet first to an address inside the option.
	SourceRouteOpt OptEffect = iota + 1
	// PinOpt pins the socket to an interface (by name or index): a
	// "loopback" destination then leaves through that interface.
	PinOpt
	// JoinOpt joins a multicast group (or an IPv6 anycast address): the
	// kernel announces it on the segment with IGMP or MLD reports.
	JoinOpt
	// NetfilterOpt replaces a legacy netfilter table (iptables,
	// ip6tables, arptables, ebtables) or changes IPVS services: NAT and
	// load-balancing rules of the socket's network namespace, reachable
	// through any inet socket (nf_setsockopt), with only the caller's
	// CAP_NET_ADMIN checked.
	NetfilterOpt
)

// Legacy netfilter setsockopt numbers, which x/sys/unix does not have:
// IPT_BASE_CTL (linux/netfilter_ipv4/ip_tables.h, also IP6T_ in
// netfilter_ipv6/ip6_tables.h), ARPT_BASE_CTL (netfilter_arp/arp_tables.h),
// EBT_BASE_CTL (netfilter_bridge/ebtables.h), IP_VS_BASE_CTL (linux/ip_vs.h:
// 64+1024+64, the set commands up to IP_VS_SO_SET_MAX = base+15).
const (
	iptSoSetReplace   = 64
	iptSoSetCounters  = 65
	arptSoSetReplace  = 96
	arptSoSetCounters = 97
	ebtSoSetEntries   = 128
	ebtSoSetCounters  = 129
	ipvsSoSetBase     = 64 + 1024 + 64
	ipvsSoSetLast     = ipvsSoSetBase + 15
)

// TrappedSockOpts are the (level, optname) pairs the filter sends to the
// supervisor, on every ABI. Level and optname are C ints; the same values
// hold on amd64, arm64 and their 32-bit ABIs (include/uapi/asm-generic/
// socket.h, linux/in.h, linux/in6.h).
//
// Not here, on purpose: IP_PKTINFO and IPV6_2292PKTINFO as options only ask
// for ancillary data on receive (IPV6_PKTINFO, the sticky send option, is
// here); IP_MULTICAST_IF and friends pick the interface of multicast sends,
// which are denied by destination anyway; the block/unblock/filter options
// act only on a group the socket has already joined.
var TrappedSockOpts = []SockOpt{
	{unix.SOL_SOCKET, unix.SO_BINDTODEVICE, "SO_BINDTODEVICE", PinOpt, 0},
	{unix.SOL_SOCKET, unix.SO_BINDTOIFINDEX, "SO_BINDTOIFINDEX", PinOpt, 0},

	{unix.IPPROTO_IP, unix.IP_OPTIONS, "IP_OPTIONS", SourceRouteOpt, 0},
	{unix.IPPROTO_IP, unix.IP_UNICAST_IF, "IP_UNICAST_IF", PinOpt, 0},
	{unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, "IP_ADD_MEMBERSHIP", JoinOpt, 0},
	{unix.IPPROTO_IP, unix.IP_ADD_SOURCE_MEMBERSHIP, "IP_ADD_SOURCE_MEMBERSHIP", JoinOpt, 0},
	{unix.IPPROTO_IP, unix.MCAST_JOIN_GROUP, "MCAST_JOIN_GROUP", JoinOpt, 0},
	{unix.IPPROTO_IP, unix.MCAST_JOIN_SOURCE_GROUP, "MCAST_JOIN_SOURCE_GROUP", JoinOpt, 0},

	{unix.IPPROTO_IPV6, unix.IPV6_RTHDR, "IPV6_RTHDR", SourceRouteOpt, 0},
	{unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR, "IPV6_2292RTHDR", SourceRouteOpt, 0},
	// The whole RFC 2292 sticky option block can carry a routing header
	// and a pktinfo; it is not decoded, hence denied as a source route.
	{unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS, "IPV6_2292PKTOPTIONS", SourceRouteOpt, 0},
	{unix.IPPROTO_IPV6, unix.IPV6_UNICAST_IF, "IPV6_UNICAST_IF", PinOpt, 0},
	{unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, "IPV6_PKTINFO", PinOpt, 0},
	{unix.IPPROTO_IPV6, unix.IPV6_ADD_MEMBERSHIP, "IPV6_ADD_MEMBERSHIP", JoinOpt, 0},
	{unix.IPPROTO_IPV6, unix.IPV6_JOIN_ANYCAST, "IPV6_JOIN_ANYCAST", JoinOpt, 0},
	{unix.IPPROTO_IPV6, unix.MCAST_JOIN_GROUP, "MCAST_JOIN_GROUP", JoinOpt, 0},
	{unix.IPPROTO_IPV6, unix.MCAST_JOIN_SOURCE_GROUP, "MCAST_JOIN_SOURCE_GROUP", JoinOpt, 0},

	// Counters are set with the table they belong to, and are harmless
	// alone; they are trapped anyway, so that a table write has one rule.
	{Level: unix.IPPROTO_IP, Name: iptSoSetReplace, Label: "IPT_SO_SET_REPLACE", Effect: NetfilterOpt, Last: iptSoSetCounters},
	{Level: unix.IPPROTO_IP, Name: arptSoSetReplace, Label: "ARPT_SO_SET_REPLACE", Effect: NetfilterOpt, Last: arptSoSetCounters},
	{Level: unix.IPPROTO_IP, Name: ebtSoSetEntries, Label: "EBT_SO_SET_ENTRIES", Effect: NetfilterOpt, Last: ebtSoSetCounters},
	{Level: unix.IPPROTO_IP, Name: ipvsSoSetBase, Label: "IP_VS_SO_SET", Effect: NetfilterOpt, Last: ipvsSoSetLast},
	{Level: unix.IPPROTO_IPV6, Name: iptSoSetReplace, Label: "IP6T_SO_SET_REPLACE", Effect: NetfilterOpt, Last: iptSoSetCounters},
}

// LookupSockOpt finds a trapped option; ok is false for any other.
func LookupSockOpt(level, name uint32) (SockOpt, bool) {
	for _, o := range TrappedSockOpts {
		if o.Level == level && name >= o.Name && name <= max(o.Name, o.Last) {
			return o, true
		}
	}
	return SockOpt{}, false
}

// sockOptLevels lists the levels of TrappedSockOpts in first-seen order.
func sockOptLevels() []uint32 {
	var levels []uint32
	seen := map[uint32]bool{}
	for _, o := range TrappedSockOpts {
		if !seen[o.Level] {
			seen[o.Level] = true
			levels = append(levels, o.Level)
		}
	}
	return levels
}
