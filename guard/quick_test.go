package guard

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// countingAttribution fails the test if Begin is called: what Quick calls
// quick must be decided without attribution, which may ask an inner
// nettrap and wait.
type countingAttribution struct {
	t     *testing.T
	begun int
}

func (a *countingAttribution) Begin(*decision.Call) Transaction {
	a.begun++
	return Generic{}.Begin(nil)
}

// Quick says yes exactly for the calls Decide answers without asking the
// attribution: the ptrace engine decides those on its tracer thread.
func TestQuickMeansNoAttribution(t *testing.T) {
	loop, ext := inet("127.0.0.1:80"), inet("203.0.113.7:80")
	netlink := call(bpf.Socket)
	netlink.Socket = decision.SocketArgs{Domain: unix.AF_NETLINK, Type: unix.SOCK_RAW}
	unreadable := call(bpf.Connect)
	unreadable.Err = unix.EFAULT
	tests := []struct {
		name  string
		c     *decision.Call
		quick bool
	}{
		{"loopback connect", call(bpf.Connect, loop), true},
		{"external connect", call(bpf.Connect, ext), false},
		{"sendmmsg loopback and external", call(bpf.SendMMsg, loop, ext), false},
		{"netlink socket", netlink, true},
		{"unreadable", unreadable, true},
		{"foreign ABI", &decision.Call{TID: callerPID, Syscall: bpf.Call{Name: "socketcall", Kind: bpf.SocketCall, Foreign: true}, Task: task("")}, false},
	}
	for _, tt := range tests {
		f := newFixture(t, policy.Policy{})
		attr := &countingAttribution{t: t}
		f.g.Attribution = attr
		if got := f.g.Quick(tt.c); got != tt.quick {
			t.Errorf("%s: Quick = %v, want %v", tt.name, got, tt.quick)
		}
		f.g.Decide(tt.c)
		if asked := attr.begun > 0; asked == tt.quick {
			t.Errorf("%s: Quick = %v but Decide asked the attribution %d times", tt.name, tt.quick, attr.begun)
		}
	}
}
