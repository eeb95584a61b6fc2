package classify

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Resolvers describes the name resolvers whose use is the DNS class.
type Resolvers struct {
	// Nameservers come from resolv.conf; port 53 on any of them is DNS.
	Nameservers []netip.Addr
	// UnixSockets are resolver unix sockets. A path names a socket file;
	// "@name" names an abstract socket. nil means DefaultResolverSockets();
	// use an empty, non-nil slice for none.
	UnixSockets []string
}

// stubResolvers listen on port 53 whatever resolv.conf says:
// systemd-resolved (127.0.0.53, and 127.0.0.54 in proxy mode) and Docker's
// embedded DNS (127.0.0.11).
var stubResolvers = []netip.Addr{
	netip.AddrFrom4([4]byte{127, 0, 0, 53}),
	netip.AddrFrom4([4]byte{127, 0, 0, 54}),
	netip.AddrFrom4([4]byte{127, 0, 0, 11}),
}

// DefaultResolverSockets returns the unix sockets of nscd and of
// systemd-resolved's varlink interface (nss-resolve talks to it).
func DefaultResolverSockets() []string {
	return []string{
		"/run/nscd/socket",
		"/var/run/nscd/socket",
		"/run/systemd/resolve/io.systemd.Resolve",
		"/run/systemd/resolve/io.systemd.Resolve.Monitor",
		"/run/varlink/registry/io.systemd.Resolve",
	}
}

func (r *Resolvers) isNameserver(addr netip.Addr) bool {
	for _, s := range stubResolvers {
		if addr == s {
			return true
		}
	}
	if r == nil {
		return false
	}
	for _, ns := range r.Nameservers {
		if ns.WithZone("").Unmap() == addr {
			return true
		}
	}
	return false
}

func (r *Resolvers) sockets() []string {
	if r == nil || r.UnixSockets == nil {
		return DefaultResolverSockets()
	}
	return r.UnixSockets
}

// isResolverSocket matches an AF_UNIX path or abstract name. An abstract
// name matches "@name" entries exactly, and also a resolver path it spells
// out (nothing legitimate needs that name; a proxy behind it would be DNS).
func (r *Resolvers) isResolverSocket(path string, abstract bool) bool {
	for _, s := range r.sockets() {
		if name, ok := strings.CutPrefix(s, "@"); ok {
			if abstract && path == name {
				return true
			}
			continue
		}
		if abstract && !filepath.IsAbs(path) {
			continue // only a full path spells out a resolver path
		}
		if pathMatches(path, normalizePath(s)) {
			return true
		}
	}
	return false
}

// pathMatches compares a destination path with a normalized resolver path.
// A relative path cannot be resolved without the target's working
// directory, so it matches any resolver path ending in it (fail closed).
func pathMatches(path, resolver string) bool {
	if path == "" || resolver == "" {
		return false
	}
	if filepath.IsAbs(path) {
		return normalizePath(path) == resolver
	}
	rel := filepath.Clean(path)
	for {
		rest, ok := strings.CutPrefix(rel, "../")
		if !ok {
			break
		}
		rel = rest
	}
	if rel == "." || rel == ".." {
		return false
	}
	return strings.HasSuffix(resolver, "/"+rel) ||
		strings.HasSuffix("/var"+resolver, "/"+rel)
}

// normalizePath cleans an absolute path, drops a /proc/<pid>/root prefix
// (the same file seen through procfs) and reads /var/run as /run (on every
// current distribution it is a symlink to /run).
func normalizePath(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	p = filepath.Clean(p)
	for {
		rest, ok := cutProcRoot(p)
		if !ok {
			break
		}
		p = rest
	}
	if p == "/var/run" || strings.HasPrefix(p, "/var/run/") {
		p = p[len("/var"):]
	}
	return p
}

// cutProcRoot removes a leading /proc/{self,thread-self,N}/root.
func cutProcRoot(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return p, false
	}
	who, rest, _ := strings.Cut(rest, "/")
	if who != "self" && who != "thread-self" && !isDigits(who) {
		return p, false
	}
	if rest != "root" && !strings.HasPrefix(rest, "root/") {
		return p, false
	}
	return "/" + strings.TrimPrefix(rest[len("root"):], "/"), true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseResolvConf returns the addresses of the "nameserver" lines, in
// order, without duplicates. It is lenient, as a guard should be: leading
// blanks, an IPv6 zone and a trailing comment are accepted; comment lines
// (# and ;) and lines it cannot read are skipped. Only a read error fails.
func ParseResolvConf(r io.Reader) ([]netip.Addr, error) {
	var addrs []netip.Addr
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if addr, ok := nameserverLine(line); ok && !containsAddr(addrs, addr) {
			addrs = append(addrs, addr)
		}
		if errors.Is(err, io.EOF) {
			return addrs, nil
		}
		if err != nil {
			return addrs, fmt.Errorf("read resolv.conf: %w", err)
		}
	}
}

func nameserverLine(line string) (netip.Addr, bool) {
	if i := strings.IndexAny(line, "#;"); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "nameserver" {
		return netip.Addr{}, false
	}
	addr, err := netip.ParseAddr(f[1])
	if err != nil {
		return netip.Addr{}, false
	}
	return addr, true
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, b := range addrs {
		if a == b {
			return true
		}
	}
	return false
}

// LoadResolvConf reads path with ParseResolvConf. A missing file is no
// nameservers and no error.
func LoadResolvConf(path string) ([]netip.Addr, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load resolv.conf: %w", err)
	}
	defer f.Close()
	return ParseResolvConf(f)
}
