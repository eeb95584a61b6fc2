package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one --allow CIDR[:PORT]: destinations inside Prefix, on Port (0
// for any port), are allowed whatever their class.
type Rule struct {
	Prefix netip.Prefix
	Port   uint16
}

// String gives the rule back in the form ParseRule takes.
func (r Rule) String() string {
	if r.Port == 0 {
		return r.Prefix.String()
	}
	if r.Prefix.Addr().Is6() {
		return "[" + r.Prefix.String() + "]:" + strconv.Itoa(int(r.Port))
	}
	return r.Prefix.String() + ":" + strconv.Itoa(int(r.Port))
}

// ParseRule parses "CIDR", "CIDR:PORT", "ADDR", "ADDR:PORT", "[V6CIDR]:PORT"
// or "[V6ADDR]:PORT". Names are refused: nettrap never resolves a name.
// The error does not name the flag: the caller knows whether the rule came
// from --allow or NETTRAP_ALLOW.
func ParseRule(s string) (Rule, error) {
	orig := s
	s = strings.TrimSpace(s)
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("%q: %s (want CIDR[:PORT], e.g. 10.0.0.0/8:5432 or [2001:db8::/32]:443; addresses only, never names)", orig, why)
	}
	if s == "" {
		return bad("empty")
	}
	var port uint16
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("missing ]")
		}
		rest := s[end+1:]
		s = s[1:end]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return bad("junk after ]")
			}
			n, err := parsePort(p)
			if err != nil {
				return bad(err.Error())
			}
			port = n
		}
	} else if slash := strings.Index(s, "/"); slash >= 0 {
		if bits, p, ok := strings.Cut(s[slash+1:], ":"); ok {
			n, err := parsePort(p)
			if err != nil {
				return bad(err.Error())
			}
			s, port = s[:slash+1]+bits, n
		}
	} else if strings.Count(s, ":") == 1 {
		host, p, _ := strings.Cut(s, ":")
		n, err := parsePort(p)
		if err != nil {
			return bad(err.Error())
		}
		s, port = host, n
	}
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return bad("not a CIDR")
		}
		return Rule{Prefix: pfx.Masked(), Port: port}, nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return bad("not an IP address or CIDR")
	}
	if addr.Zone() != "" {
		return bad("zones are not supported")
	}
	return Rule{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Port: port}, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(n), nil
}

// Match reports whether the rule covers ap. A v4-mapped IPv6 address
// matches IPv4 rules too, since it reaches the same host.
func (r Rule) Match(ap netip.AddrPort) bool {
	if r.Port != 0 && ap.Port() != r.Port {
		return false
	}
	return r.covers(ap.Addr())
}

// covers reports whether a is inside the rule's prefix, whatever the port;
// a v4-mapped address also counts as its IPv4 one.
func (r Rule) covers(a netip.Addr) bool {
	a = a.WithZone("")
	return r.Prefix.Contains(a) || r.Prefix.Contains(a.Unmap())
}
