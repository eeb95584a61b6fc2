package supervisor_test

import (
	"encoding/binary"
	"net"
	"runtime"
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
func TestEmulatedSendtoPayload(t *testing.T) { checkEmulatedPayload(t, "sendto") }

// checkEmulatedPayload runs call-payload (payloadText to a UDP listener,
// emulated) and call-badbuf (part of the payload unmapped, emulated or
// not), for call sendto or sendmsg.
func checkEmulatedPayload(t *testing.T, call string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	out, rep := confinedMode(t, "on", call+"-payload", pc.LocalAddr().String())
	expect(t, out, "ok")
	if rep.Emulated != 1 {
		t.Errorf("%d calls emulated, want the %s", rep.Emulated, call)
	}
	buf := make([]byte, 256)
	pc.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a broken run only
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != payloadText {
		t.Fatalf("listener got %q (%v), want %q", buf[:n], err, payloadText)
	}

	rec := listen(t, "127.0.0.1")
	for _, mode := range []string{"on", "off"} {
		out, _ = confinedMode(t, mode, call+"-badbuf", rec.addr)
		expect(t, out, "EFAULT")
	}
	if _, g := rec.counts(t, 0, 0); g != 0 {
		t.Errorf("a %s with an unreadable payload delivered %d datagrams", call, g)
	}
}

// sendmsgPayload sends payloadText to addr with sendmsg on an unconnected
// UDP socket, split in two vectors, with an IP_TOS control message (as
// quic-go sends its ECN marks); with bad, the second vector points at an
// unmapped address.
func sendmsgPayload(addr string, bad bool) error {
	sa, fam := sockaddr(addr)
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	in4 := sa.(*unix.SockaddrInet4)
	name := unix.RawSockaddrInet4{Family: unix.AF_INET, Port: uint16(in4.Port>>8 | in4.Port<<8), Addr: in4.Addr}
	half := len(payloadText) / 2
	first, second := []byte(payloadText[:half]), []byte(payloadText[half:])
	// The vectors as the kernel reads them, so that one may point where
	// nothing is mapped (a Go pointer may not).
	iov := make([]byte, 2*16)
	second2 := uint64(uintptr(unsafe.Pointer(&second[0])))
	if bad {
		second2 = 1 // the unmapped first page
	}
	binary.NativeEndian.PutUint64(iov[0:], uint64(uintptr(unsafe.Pointer(&first[0]))))
	binary.NativeEndian.PutUint64(iov[8:], uint64(len(first)))
	binary.NativeEndian.PutUint64(iov[16:], second2)
	binary.NativeEndian.PutUint64(iov[24:], uint64(len(second)))
	ctl := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	h.SetLen(unix.CmsgLen(4))
	ctl[unix.CmsgLen(0)] = 2 // ECT(0)
	msg := unix.Msghdr{Name: (*byte)(unsafe.Pointer(&name)), Namelen: unix.SizeofSockaddrInet4,
		Iov: (*unix.Iovec)(unsafe.Pointer(&iov[0])), Control: &ctl[0]}
	msg.SetIovlen(2)
	msg.SetControllen(len(ctl))
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	runtime.KeepAlive(first)
	runtime.KeepAlive(second)
	if e != 0 {
		return e
	}
	return nil
}

// An emulated inet sendmsg reads its payload with its header, before the
// notification is checked (decode's prefetchMsgPayload): the datagram
// that arrives is the one the target gathered from its vectors, whole;
// and a vector the kernel could not read fails the call with EFAULT, as
// the kernel would, with nothing sent.
func TestEmulatedSendmsgPayload(t *testing.T) { checkEmulatedPayload(t, "sendmsg") }
