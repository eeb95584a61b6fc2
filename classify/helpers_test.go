package classify

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// Test addresses: documentation ranges and private/loopback ones only.

// sa4 builds a 16-byte sockaddr_in.
func sa4(t testing.TB, addr string, port uint16) []byte {
	t.Helper()
	return sa4Family(t, unix.AF_INET, addr, port)
}

func sa4Family(t testing.TB, family uint16, addr string, port uint16) []byte {
	t.Helper()
	a := netip.MustParseAddr(addr)
	if !a.Is4() {
		t.Fatalf("sa4: %s is not IPv4", addr)
	}
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, family)
	binary.BigEndian.PutUint16(b[2:], port)
	a4 := a.As4()
	copy(b[4:8], a4[:])
	return b
}

// sa6 builds a 28-byte sockaddr_in6 with the given scope id.
func sa6(t testing.TB, addr string, port uint16, scope uint32) []byte {
	t.Helper()
	return sa6Family(t, unix.AF_INET6, addr, port, scope)
}

func sa6Family(t testing.TB, family uint16, addr string, port uint16, scope uint32) []byte {
	t.Helper()
	a := netip.MustParseAddr(addr)
	if !a.Is6() {
		t.Fatalf("sa6: %s is not IPv6", addr)
	}
	b := make([]byte, 28)
	binary.NativeEndian.PutUint16(b, family)
	binary.BigEndian.PutUint16(b[2:], port)
	binary.NativeEndian.PutUint32(b[4:], 0x12345) // flowinfo: must be ignored
	a16 := a.As16()
	copy(b[8:24], a16[:])
	binary.NativeEndian.PutUint32(b[24:], scope)
	return b
}

// saUnix builds a sockaddr_un of exactly 2+len(path) bytes (no NUL added).
func saUnix(path string) []byte {
	b := make([]byte, 2, 2+len(path))
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	return append(b, path...)
}

// saFamily builds a sockaddr of n bytes with the given family and zeros.
func saFamily(family uint16, n int) []byte {
	b := make([]byte, n)
	if n >= 2 {
		binary.NativeEndian.PutUint16(b, family)
	}
	return b
}

func mustParse(t *testing.T, b []byte, op Op) Dest {
	t.Helper()
	d, err := Parse(b, op)
	if err != nil {
		t.Fatalf("Parse(% x, %v): %v", b, op, err)
	}
	return d
}
