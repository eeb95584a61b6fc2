package cgroupbpf

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseHeld reads events laid out as the hold program writes them.
func TestParseHeld(t *testing.T) {
	ev := make([]byte, heldEventLen)
	binary.LittleEndian.PutUint64(ev[0:], 4321<<32|4325)
	binary.BigEndian.PutUint16(ev[8:], 9)
	binary.LittleEndian.PutUint32(ev[12:], 4)
	binary.LittleEndian.PutUint64(ev[16:], 77)
	copy(ev[24:], []byte{192, 0, 2, 1})
	binary.LittleEndian.PutUint64(ev[40:], 0x401000)
	binary.LittleEndian.PutUint64(ev[48:], 0xc000100000)
	binary.LittleEndian.PutUint64(ev[72:], 4026531840)
	binary.LittleEndian.PutUint32(ev[80:], unix.SOCK_DGRAM)
	binary.LittleEndian.PutUint32(ev[84:], unix.IPPROTO_UDP)
	binary.LittleEndian.PutUint32(ev[88:], uint32(unix.SIGSTOP))
	binary.LittleEndian.PutUint32(ev[92:], unix.SYS_SENDTO)
	binary.LittleEndian.PutUint32(ev[96:], 40000)
	copy(ev[100:], []byte{127, 0, 0, 1})
	h, err := ParseHeld(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := Held{TID: 4325, PID: 4321, Dest: netip.MustParseAddrPort("192.0.2.1:9"), Cookie: 77, Netns: 4026531840,
		Type: unix.SOCK_DGRAM, Protocol: unix.IPPROTO_UDP, PC: 0x401000, SP: 0xc000100000, Stopped: true,
		Nr: unix.SYS_SENDTO, Source: netip.MustParseAddrPort("127.0.0.1:40000"), key: 4321<<32 | 4325}
	if h != want {
		t.Errorf("ParseHeld = %+v, want %+v", h, want)
	}
	binary.LittleEndian.PutUint32(ev[12:], 6)
	copy(ev[24:40], netip.MustParseAddr("2001:db8::1").AsSlice())
	if h, _ := ParseHeld(ev); h.Dest != netip.MustParseAddrPort("[2001:db8::1]:9") {
		t.Errorf("IPv6 destination read as %v", h.Dest)
	}
	if _, err := ParseHeld(ev[:heldEventLen-1]); err == nil {
		t.Error("a short event was read")
	}
}

// TestParseDropped reads the backstop's reports, and heldIP lays an
// allowed destination out as the program compares it.
func TestParseDropped(t *testing.T) {
	r := make([]byte, droppedEventLen)
	binary.LittleEndian.PutUint64(r[0:], 10<<32|11)
	binary.LittleEndian.PutUint64(r[8:], 5)
	copy(r[16:], []byte{203, 0, 113, 7})
	binary.LittleEndian.PutUint32(r[32:], 4)
	binary.LittleEndian.PutUint32(r[36:], DropInterface)
	binary.LittleEndian.PutUint32(r[40:], 2)
	d, err := ParseDropped(r)
	if err != nil {
		t.Fatal(err)
	}
	want := Dropped{PID: 10, TID: 11, Cookie: 5, Dest: netip.MustParseAddr("203.0.113.7"), Why: DropInterface, Ifindex: 2}
	if d != want {
		t.Errorf("ParseDropped = %+v, want %+v", d, want)
	}
	if _, err := ParseDropped(r[:10]); err == nil {
		t.Error("a short report was read")
	}
	if got := heldIP(netip.MustParseAddr("::ffff:203.0.113.7").Unmap()); string(got[:4]) != string([]byte{203, 0, 113, 7}) || got[4] != 0 {
		t.Errorf("heldIP of an unmapped address = %v", got)
	}
}

// TestParseHeldUnix reads a unix program's event: the path as long as
// the address's length says.
func TestParseHeldUnix(t *testing.T) {
	ev := make([]byte, unixEventLen)
	binary.LittleEndian.PutUint64(ev[0:], 7<<32|8)
	binary.LittleEndian.PutUint32(ev[12:], unix.AF_UNIX)
	binary.LittleEndian.PutUint64(ev[16:], 99)
	binary.LittleEndian.PutUint32(ev[92:], unix.SYS_CONNECT)
	copy(ev[heldEventLen:], "/run/nscd/socket\x00junk")
	for _, c := range []struct {
		addrlen uint32
		want    string
	}{
		{2 + 17, "/run/nscd/socket\x00"},
		{2 + 3, "/ru"},
		{0, ""},
		{200, "/run/nscd/socket\x00junk" + strings.Repeat("\x00", sunPathLen-21)},
	} {
		binary.LittleEndian.PutUint32(ev[heldEventLen+sunPathLen:], c.addrlen)
		h, err := ParseHeld(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Unix || h.SunPath != c.want || h.Cookie != 99 || h.Nr != unix.SYS_CONNECT || h.Dest.IsValid() {
			t.Errorf("addrlen %d: %+v, want unix %q", c.addrlen, h, c.want)
		}
	}
	if _, err := ParseHeld(ev[:unixEventLen-1]); err == nil {
		t.Error("a short unix event was read")
	}
}

// TestNameHash: the last component is hashed, whatever the directories
// or the bytes past a NUL; the names held are the resolver sockets'.
func TestNameHash(t *testing.T) {
	socket := NameHash("socket")
	for _, p := range []string{"/run/nscd/socket", "socket", "a//socket", "/x/socket\x00/y/other", "\x00/abstract/socket", "../socket"} {
		if NameHash(p) != socket {
			t.Errorf("NameHash(%q) = %#x, want socket's %#x", p, NameHash(p), socket)
		}
	}
	for _, p := range []string{"/run/nscd/socket/", "/run/nscd/sockets", "/run/nscd/socket.x", "", "\x00socketx", "/socket/x"} {
		if NameHash(p) == socket {
			t.Errorf("NameHash(%q) is socket's", p)
		}
	}
	got := UnixNames([]string{"/run/nscd/socket", "/run/systemd/resolve/io.systemd.Resolve", "@abstract", "@/a/b"})
	want := []string{"socket", "io.systemd.Resolve", "abstract", "b"}
	if !slices.Equal(got, want) {
		t.Errorf("UnixNames = %q, want %q", got, want)
	}
}
