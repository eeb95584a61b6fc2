package guard

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// Under --sealed an allowed unix or loopback call carries a peer check;
// in the default mode it does not (today's rules: every local service is
// the suite's to use), nor does a call to an address a rule allows.
func TestPeerCheckOnlySealed(t *testing.T) {
	sock := classify.Dest{Family: unix.AF_UNIX, Path: "/var/run/docker.sock"}
	unspec := inet("0.0.0.0:80")
	rule, _ := policy.ParseRule("192.0.2.0/24")
	tests := []struct {
		name string
		p    policy.Policy
		c    *supervisor.Call
		want bool
	}{
		{"default unix", policy.Policy{}, call(bpf.Connect, sock), false},
		{"default loopback", policy.Policy{}, call(bpf.Connect, inet("127.0.0.1:80")), false},
		{"sealed unix", policy.Policy{Sealed: true}, call(bpf.Connect, sock), true},
		{"sealed loopback", policy.Policy{Sealed: true}, call(bpf.SendTo, inet("[::1]:53")), true},
		{"sealed unspecified allowed", policy.Policy{Sealed: true, AllowUnspecified: true}, call(bpf.Connect, unspec), true},
		{"sealed ruled", policy.Policy{Sealed: true, Rules: []policy.Rule{rule}}, call(bpf.Connect, inet("192.0.2.1:80")), false},
		{"sealed mixed", policy.Policy{Sealed: true, Rules: []policy.Rule{rule}}, call(bpf.SendMMsg, inet("192.0.2.1:80"), inet("127.0.0.1:9")), true},
	}
	for _, tt := range tests {
		f := newFixture(t, tt.p)
		a := f.g.Decide(tt.c)
		if !a.Allow || (a.Peer != nil) != tt.want {
			t.Errorf("%s: allow %t, peer check %t; want allowed, peer check %t", tt.name, a.Allow, a.Peer != nil, tt.want)
		}
		if got := f.g.Quick(tt.c); tt.want && got {
			t.Errorf("%s: Quick, but a peer outside would need attribution", tt.name)
		}
	}
}

// A peer outside the tree is denied with a line naming the socket and the
// daemon, and recorded; --allow-unix lets it through, audited.
func TestPeerOutside(t *testing.T) {
	sock := classify.Dest{Family: unix.AF_UNIX, Path: "/var/run/docker.sock"}
	docker := supervisor.Peer{Name: "/var/run/docker.sock", PID: 123, Comm: "dockerd", Role: "listener"}

	f := newFixture(t, policy.Policy{Sealed: true})
	c := call(bpf.Connect, sock)
	a := f.g.Decide(c)
	if errno := a.Peer.Outside(sock, docker); errno != unix.ECONNREFUSED {
		t.Fatalf("errno %v, want ECONNREFUSED", errno)
	}
	want := "connect /var/run/docker.sock (unix) by pid 4242 curl: sealed: peer outside the tree (listener pid 123 dockerd, outside the tree)"
	if !strings.Contains(f.msgs.String(), want) {
		t.Errorf("messages %q\nwant %q", f.msgs.String(), want)
	}
	if got := f.g.Counts(); got.Denied != 1 || got.AllowedByClass["unix"] != 0 {
		t.Errorf("counts %+v: want the denial only", got)
	}
	recs := f.records(t)
	if len(recs) != 1 || recs[0].Decision != audit.Denied || recs[0].Dest != "/var/run/docker.sock" || recs[0].Errno != "ECONNREFUSED" {
		t.Errorf("records %+v", recs)
	}

	f = newFixture(t, policy.Policy{Sealed: true, AllowUnix: []string{"/var/run/docker.sock"}})
	a = f.g.Decide(call(bpf.Connect, sock))
	if errno := a.Peer.Outside(sock, docker); errno != 0 {
		t.Fatalf("errno %v under --allow-unix", errno)
	}
	recs = f.records(t)
	if len(recs) != 1 || recs[0].Decision != audit.Allowed || recs[0].Reason != "allowed: --allow-unix /var/run/docker.sock" {
		t.Errorf("records %+v", recs)
	}

	// --mode=audit: recorded as would-deny, and the call goes on.
	f = newFixture(t, policy.Policy{Sealed: true, Mode: policy.Audit})
	a = f.g.Decide(call(bpf.Connect, sock))
	if errno := a.Peer.Outside(sock, docker); errno != 0 {
		t.Fatalf("errno %v in audit mode", errno)
	}
	if recs = f.records(t); len(recs) != 1 || recs[0].Decision != audit.WouldDeny {
		t.Errorf("records %+v", recs)
	}
	if !strings.Contains(f.msgs.String(), "sealed: peer outside the tree") {
		t.Errorf("messages %q", f.msgs.String())
	}
}
