package classify

import (
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Op says what the intercepted syscall does with the address.
type Op int

const (
	// OpConnect is connect(2).
	OpConnect Op = iota
	// OpSend is the destination of sendto(2), sendmsg(2) or sendmmsg(2).
	OpSend
)

// Dest is a parsed destination.
type Dest struct {
	// Family is the AF_* the kernel acts on: the sockaddr's own family,
	// except that an AF_UNSPEC send is read as AF_INET or AF_INET6 (see
	// Unspec).
	Family uint16
	// Addr is set for AF_INET and AF_INET6, as written: a v4-mapped IPv6
	// address stays IPv6 here. The IPv6 scope id, if nonzero, is the zone.
	Addr netip.AddrPort
	// Path is the AF_UNIX path, or the abstract name without its leading NUL.
	Path string
	// Abstract marks an AF_UNIX abstract name.
	Abstract bool
	// Unnamed marks an AF_UNIX address with no path (addrlen == 2).
	Unnamed bool
	// NoDest marks a call with no destination at all: connect(AF_UNSPEC)
	// (a disconnect) or a send with an AF_UNSPEC sockaddr too short to
	// carry an address.
	NoDest bool
	// Unspec marks a sockaddr that said AF_UNSPEC and was read as Family.
	Unspec bool
	// Unspec6 is the IPv6 reading of an AF_UNSPEC send of at least 24
	// bytes when the socket family was unknown (Parse, or ParseIn with
	// AF_UNSPEC): Family/Addr hold the IPv4 reading, and Classify returns
	// the stricter class of the two. Invalid otherwise.
	Unspec6 netip.AddrPort
}

// String renders the destination for messages and the audit trail.
func (d Dest) String() string {
	switch {
	case d.NoDest:
		return "none"
	case d.Family == unix.AF_INET || d.Family == unix.AF_INET6:
		// Go's UDP sockets are dual-stack: their IPv4 destinations come
		// v4-mapped. Shown as the IPv4 address they reach.
		if a := d.Addr.Addr(); a.Is4In6() {
			return netip.AddrPortFrom(a.Unmap(), d.Addr.Port()).String()
		}
		return d.Addr.String()
	case d.Family == unix.AF_UNIX:
		return d.unixString()
	case d.Family == unix.AF_NETLINK:
		return "netlink"
	}
	if name, ok := familyNames[d.Family]; ok {
		return "AF_" + strings.ToUpper(name)
	}
	return "family " + strconv.Itoa(int(d.Family))
}

func (d Dest) unixString() string {
	switch {
	case d.Unnamed:
		return "(unnamed)"
	case d.Abstract:
		return "@" + printable(d.Path)
	}
	return printable(d.Path)
}

// printable returns s unchanged if every rune is printable, or Go-quoted
// otherwise, so that a hostile name cannot forge lines in the output.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// FamilyName names Family in lower case ("inet", "unix", ...), or
// "family N" for a family it does not know.
func (d Dest) FamilyName() string {
	return FamilyName(d.Family)
}

// FamilyName names an AF_* constant in lower case, or "family N".
func FamilyName(family uint16) string {
	if name, ok := familyNames[family]; ok {
		return name
	}
	return "family " + strconv.Itoa(int(family))
}

// InDir returns d with a relative AF_UNIX path joined to dir (the target's
// working directory, absolute). Any other destination is returned unchanged.
func (d Dest) InDir(dir string) Dest {
	if d.Family != unix.AF_UNIX || d.Abstract || d.Unnamed ||
		d.Path == "" || filepath.IsAbs(d.Path) || !filepath.IsAbs(dir) {
		return d
	}
	d.Path = filepath.Join(dir, d.Path)
	return d
}

var familyNames = map[uint16]string{
	unix.AF_UNSPEC:     "unspec",
	unix.AF_UNIX:       "unix",
	unix.AF_INET:       "inet",
	unix.AF_AX25:       "ax25",
	unix.AF_IPX:        "ipx",
	unix.AF_APPLETALK:  "appletalk",
	unix.AF_NETROM:     "netrom",
	unix.AF_BRIDGE:     "bridge",
	unix.AF_ATMPVC:     "atmpvc",
	unix.AF_X25:        "x25",
	unix.AF_INET6:      "inet6",
	unix.AF_ROSE:       "rose",
	12:                 "decnet", // AF_DECnet, not in x/sys/unix
	unix.AF_NETBEUI:    "netbeui",
	unix.AF_SECURITY:   "security",
	unix.AF_KEY:        "key",
	unix.AF_NETLINK:    "netlink",
	unix.AF_PACKET:     "packet",
	unix.AF_ASH:        "ash",
	unix.AF_ECONET:     "econet",
	unix.AF_ATMSVC:     "atmsvc",
	unix.AF_RDS:        "rds",
	unix.AF_SNA:        "sna",
	unix.AF_IRDA:       "irda",
	unix.AF_PPPOX:      "pppox",
	unix.AF_WANPIPE:    "wanpipe",
	unix.AF_LLC:        "llc",
	unix.AF_IB:         "ib",
	unix.AF_MPLS:       "mpls",
	unix.AF_CAN:        "can",
	unix.AF_TIPC:       "tipc",
	unix.AF_BLUETOOTH:  "bluetooth",
	unix.AF_IUCV:       "iucv",
	unix.AF_RXRPC:      "rxrpc",
	unix.AF_ISDN:       "isdn",
	unix.AF_PHONET:     "phonet",
	unix.AF_IEEE802154: "ieee802154",
	unix.AF_CAIF:       "caif",
	unix.AF_ALG:        "alg",
	unix.AF_NFC:        "nfc",
	unix.AF_VSOCK:      "vsock",
	unix.AF_KCM:        "kcm",
	unix.AF_QIPCRTR:    "qipcrtr",
	unix.AF_SMC:        "smc",
	unix.AF_XDP:        "xdp",
	unix.AF_MCTP:       "mctp",
}
