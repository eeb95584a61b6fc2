package decision

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/classify"
)

// TestAnswerMeansOneThing checks every constructor: an allowed answer
// carries no errno and no redirect, a denied one no peer check and no
// capless flag, and a denial never carries errno 0.
func TestAnswerMeansOneThing(t *testing.T) {
	peer := &PeerCheck{Outside: func(classify.Dest, Peer) unix.Errno { return unix.EPERM }}
	rd := &Redirect{To4: netip.MustParseAddrPort("127.0.0.1:53")}
	tests := []struct {
		name    string
		a       Answer
		allowed bool
		errno   unix.Errno
		capless bool
		peer    *PeerCheck
		rd      *Redirect
	}{
		{"zero", Answer{}, false, unix.EPERM, false, nil, nil},
		{"allow", Allow(), true, 0, false, nil, nil},
		{"capless", AllowCapless(), true, 0, true, nil, nil},
		{"peers", AllowPeers(peer), true, 0, false, peer, nil},
		{"peers nil", AllowPeers(nil), true, 0, false, nil, nil},
		{"deny", Deny(unix.EACCES), false, unix.EACCES, false, nil, nil},
		{"deny 0", Deny(0), false, unix.EPERM, false, nil, nil},
		{"redirect", DenyRedirect(unix.ECONNREFUSED, rd), false, unix.ECONNREFUSED, false, nil, rd},
		{"redirect nil", DenyRedirect(unix.EACCES, nil), false, unix.EACCES, false, nil, nil},
		{"redirect 0", DenyRedirect(0, rd), false, unix.EPERM, false, nil, rd},
	}
	for _, tt := range tests {
		a := tt.a
		if a.Allowed() != tt.allowed || a.Errno() != tt.errno || a.Capless() != tt.capless ||
			a.Peer() != tt.peer || a.Redirect() != tt.rd {
			t.Errorf("%s: allowed %t errno %v capless %t peer %p redirect %p; want %t %v %t %p %p",
				tt.name, a.Allowed(), a.Errno(), a.Capless(), a.Peer(), a.Redirect(),
				tt.allowed, tt.errno, tt.capless, tt.peer, tt.rd)
		}
	}
}

// TestFixedTask checks the answers a decider's tests rely on.
func TestFixedTask(t *testing.T) {
	task := FixedTask{Process: Caller{PID: 7}, Sock: "udp", Missing: []string{"/gone"}, Tree: true}
	if task.Caller().PID != 7 || task.SockType() != "udp" || !task.TreeNetns() || !task.Pending() {
		t.Errorf("fixed answers changed: %+v", task)
	}
	if task.PathExists("/gone") || !task.PathExists("/here") {
		t.Error("PathExists does not follow Missing")
	}
	task.Process.Gone = true
	if task.Pending() {
		t.Error("a gone process is still pending")
	}
}

// TestUnkept: only a plain Allow can say that its decider keeps nothing
// of the call; any other answer stays kept, whatever it is asked.
func TestUnkept(t *testing.T) {
	peer := &PeerCheck{Outside: func(classify.Dest, Peer) unix.Errno { return unix.EPERM }}
	rd := &Redirect{To4: netip.MustParseAddrPort("127.0.0.1:53")}
	if Allow().KeepsCall() == false {
		t.Error("an Allow is kept unless said otherwise")
	}
	if a := Allow().Unkept(); a.KeepsCall() || !a.Allowed() || a.Errno() != 0 {
		t.Errorf("Allow().Unkept(): keeps %t, allowed %t, errno %v", a.KeepsCall(), a.Allowed(), a.Errno())
	}
	for name, a := range map[string]Answer{
		"capless":  AllowCapless(),
		"peers":    AllowPeers(peer),
		"deny":     Deny(unix.EACCES),
		"redirect": DenyRedirect(unix.ECONNREFUSED, rd),
	} {
		u := a.Unkept()
		if !u.KeepsCall() {
			t.Errorf("%s: Unkept made it unkept", name)
		}
		if u.Allowed() != a.Allowed() || u.Errno() != a.Errno() || u.Capless() != a.Capless() || u.Peer() != a.Peer() || u.Redirect() != a.Redirect() {
			t.Errorf("%s: Unkept changed the answer", name)
		}
	}
}
