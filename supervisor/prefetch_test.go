package supervisor_test

import (
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// payloadText is what sendto-payload sends.
const payloadText = "read with the address, sent by the supervisor"

// sendtoPayload sends payloadText (or, bad, 64 bytes from an unmapped
// address) on an unconnected UDP socket to addr.
func sendtoPayload(addr string, bad bool) error {
	sa, fam := sockaddr(addr)
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !bad {
		return unix.Sendto(fd, []byte(payloadText), 0, sa)
	}
	in4 := sa.(*unix.SockaddrInet4)
	raw := unix.RawSockaddrInet4{Family: unix.AF_INET, Port: uint16(in4.Port>>8 | in4.Port<<8), Addr: in4.Addr}
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 1, 64, 0, uintptr(unsafe.Pointer(&raw)), unix.SizeofSockaddrInet4)
	if e != 0 {
		return e
	}
	return nil
}

// An emulated sendto reads its payload with its address, before the
// notification is checked: the datagram that arrives is the one the
// target sent, whole; and a payload the kernel could not read fails the
// call with EFAULT, as the kernel would, with nothing sent.
func TestEmulatedSendtoPayload(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	out, rep := confinedMode(t, "on", "sendto-payload", pc.LocalAddr().String())
	expect(t, out, "ok")
	if rep.Emulated != 1 {
		t.Errorf("%d calls emulated, want the sendto", rep.Emulated)
	}
	buf := make([]byte, 256)
	pc.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a broken run only
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != payloadText {
		t.Fatalf("listener got %q (%v), want %q", buf[:n], err, payloadText)
	}

	rec := listen(t, "127.0.0.1")
	for _, mode := range []string{"on", "off"} {
		out, _ = confinedMode(t, mode, "sendto-badbuf", rec.addr)
		expect(t, out, "EFAULT")
	}
	if _, g := rec.counts(t, 0, 0); g != 0 {
		t.Errorf("a send with an unreadable payload delivered %d datagrams", g)
	}
}
