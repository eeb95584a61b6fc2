package procmem

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// TestPayloadLayout: the RIP-relative operands reach the sockaddr_in and
// the marker, whose length the send is given (the code itself is shown
// working by integration's TestEscapeProcMem, unguarded).
func TestPayloadLayout(t *testing.T) {
	dst := netip.MustParseAddrPort("203.0.113.7:8080")
	code, err := Payload(dst, "marker;")
	if err != nil {
		t.Fatal(err)
	}
	rel := func(at int) int { return at + 7 + int(int32(binary.LittleEndian.Uint32(code[at+3:]))) }
	sa, msg := rel(21), rel(40)
	want := []byte{2, 0, 0x1f, 0x90, 203, 0, 113, 7, 0, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(code[sa:sa+16], want) {
		t.Errorf("sockaddr_in % x, want % x", code[sa:sa+16], want)
	}
	if got := string(code[msg:]); got != "marker;" {
		t.Errorf("marker %q", got)
	}
	if n := binary.LittleEndian.Uint32(code[48:]); n != 7 {
		t.Errorf("send length %d, want 7", n)
	}
	if _, err := Payload(netip.MustParseAddrPort("[2001:db8::1]:80"), "x"); err == nil {
		t.Error("an IPv6 destination was taken")
	}
	if _, err := Payload(dst, strings.Repeat("x", MaxMarker+1)); err == nil {
		t.Error("a marker longer than MaxMarker was taken")
	}
}

// TestJump: a rel32 jump where the target is within 2 GiB, an absolute
// one beyond.
func TestJump(t *testing.T) {
	if got := jump(0x401000, 0x400000); !bytes.Equal(got, []byte{0xe9, 0xfb, 0xef, 0xff, 0xff}) {
		t.Errorf("near jump % x", got)
	}
	far := jump(0x7f0000001000, 0x555555554000)
	want := []byte{0x48, 0xb8, 0x00, 0x40, 0x55, 0x55, 0x55, 0x55, 0, 0, 0xff, 0xe0}
	if !bytes.Equal(far, want) {
		t.Errorf("far jump % x, want % x", far, want)
	}
}
