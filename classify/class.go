package classify

import (
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// Class is the kind of destination, as in
// docs/checks.md#classes-by-address-only--nettrap-never-resolves-a-name.
type Class int

// The classes of that page, plus NoDestination for calls without one.
const (
	Loopback Class = iota + 1
	Unix
	Kernel
	DNS
	Unspecified
	Private
	LinkLocal
	Multicast
	External
	OtherFamily
	NoDestination
	// OwnNetns is not an address's class: the call acts in a network
	// namespace the confined tree made, where nothing leads out
	// (supervisor's Task.TreeNetns says so; Classify never returns it).
	OwnNetns
)

var classNames = [...]string{
	Loopback:      "loopback",
	Unix:          "unix",
	Kernel:        "kernel",
	DNS:           "dns",
	Unspecified:   "unspecified",
	Private:       "private",
	LinkLocal:     "link-local",
	Multicast:     "multicast",
	External:      "external",
	OtherFamily:   "other-family",
	NoDestination: "no-destination",
	OwnNetns:      "own-netns",
}

// String is the class name used in messages and the audit trail.
func (c Class) String() string {
	if c >= Loopback && c <= OwnNetns {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// AllowedByDefault reports whether the class passes without a marker or
// --allow rule (the "default" column of docs/checks.md's class table).
func (c Class) AllowedByDefault() bool {
	switch c {
	case Loopback, Unix, Kernel, NoDestination:
		return true
	}
	return false
}

// Classify puts d into its class. r may be nil: no nameservers, the
// default resolver sockets.
func (r *Resolvers) Classify(d Dest) Class {
	switch {
	case d.NoDest:
		return NoDestination
	case d.Family == unix.AF_INET || d.Family == unix.AF_INET6:
		c := r.classifyInet(d.Addr)
		if d.Unspec6.IsValid() {
			c = stricter(c, r.classifyInet(d.Unspec6))
		}
		return c
	case d.Family == unix.AF_UNIX:
		if !d.Unnamed && r.isResolverSocket(d.Path, d.Abstract) {
			return DNS
		}
		return Unix
	case d.Family == unix.AF_NETLINK:
		return Kernel
	}
	return OtherFamily
}

// stricter returns b if a would pass by default and b would not.
func stricter(a, b Class) Class {
	if a.AllowedByDefault() && !b.AllowedByDefault() {
		return b
	}
	return a
}

func (r *Resolvers) classifyInet(ap netip.AddrPort) Class {
	if !ap.IsValid() {
		return External // fail closed
	}
	// The zone picks an interface, not a destination; the kernel sends a
	// v4-mapped address as the IPv4 address it carries.
	addr := ap.Addr().WithZone("").Unmap()
	if ap.Port() == 53 && r.isNameserver(addr) {
		return DNS
	}
	return ClassifyAddr(addr)
}

// ClassifyAddr classifies an address without looking at ports or
// nameservers (no DNS class). A v4-mapped address is judged as IPv4.
func ClassifyAddr(addr netip.Addr) Class {
	addr = addr.WithZone("").Unmap()
	if !addr.IsValid() {
		return External
	}
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	return External
}

var ranges = []struct {
	prefix netip.Prefix
	class  Class
}{
	{netip.MustParsePrefix("0.0.0.0/32"), Unspecified},
	{netip.MustParsePrefix("::/128"), Unspecified},
	{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("10.0.0.0/8"), Private},
	{netip.MustParsePrefix("172.16.0.0/12"), Private},
	{netip.MustParsePrefix("192.168.0.0/16"), Private},
	{netip.MustParsePrefix("100.64.0.0/10"), Private},
	{netip.MustParsePrefix("fc00::/7"), Private},
	{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
	{netip.MustParsePrefix("255.255.255.255/32"), Multicast},
	{netip.MustParsePrefix("ff00::/8"), Multicast},
}
