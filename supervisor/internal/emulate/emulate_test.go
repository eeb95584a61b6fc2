package emulate

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
)

// sockaddr is a sockaddr of family fam, as read from the target (its
// family, then zeros).
func sockaddr(fam uint16) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, fam)
	return b
}

// TestPrefetchedInetSend: only a sendto or a sendmsg to an inet address
// whose payload was read with it is sent without asking the socket's
// type; everything else takes the path that asks.
func TestPrefetchedInetSend(t *testing.T) {
	payload := []byte("x")
	for _, tc := range []struct {
		name string
		kind bpf.Kind
		msgs []decode.RawMsg
		want bool
	}{
		{"inet sendto, payload read", bpf.SendTo, []decode.RawMsg{{Name: sockaddr(unix.AF_INET), Payload: payload}}, true},
		{"inet6 sendto, payload read", bpf.SendTo, []decode.RawMsg{{Name: sockaddr(unix.AF_INET6), Payload: payload}}, true},
		{"payload to read when sending", bpf.SendTo, []decode.RawMsg{{Name: sockaddr(unix.AF_INET)}}, false},
		{"unix sendto", bpf.SendTo, []decode.RawMsg{{Name: sockaddr(unix.AF_UNIX), Payload: payload}}, false},
		{"netlink sendto", bpf.SendTo, []decode.RawMsg{{Name: sockaddr(unix.AF_NETLINK), Payload: payload}}, false},
		{"no address", bpf.SendTo, []decode.RawMsg{{Payload: payload}}, false},
		{"inet sendmsg, payload read", bpf.SendMsg, []decode.RawMsg{{Name: sockaddr(unix.AF_INET), Payload: payload}}, true},
		{"sendmsg, payload to read when sending", bpf.SendMsg, []decode.RawMsg{{Name: sockaddr(unix.AF_INET)}}, false},
		{"unix sendmsg", bpf.SendMsg, []decode.RawMsg{{Name: sockaddr(unix.AF_UNIX), Payload: payload}}, false},
		{"sendmmsg", bpf.SendMMsg, []decode.RawMsg{{Name: sockaddr(unix.AF_INET), Payload: payload}}, false},
		{"connect", bpf.Connect, []decode.RawMsg{{Name: sockaddr(unix.AF_INET)}}, false},
	} {
		c := &Call{}
		c.Syscall.Kind, c.Msgs = tc.kind, tc.msgs
		if got := prefetchedInetSend(c); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}
