package policy

import (
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
)

func TestParseAllowUnix(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"/var/run/docker.sock", "/var/run/docker.sock", ""},
		{" /run//x/../y.sock ", "/run/y.sock", ""},
		{"@agent", "@agent", ""},
		{"", "", "empty"},
		{"@", "", "needs a name"},
		{"docker.sock", "", "not an absolute path"},
		{"/" + strings.Repeat("a", 120), "", "longer than"},
	}
	for _, tt := range tests {
		got, err := ParseAllowUnix(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAllowUnix(%q) = %q, %v; want error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseAllowUnix(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestDecidePeer(t *testing.T) {
	unixDest := func(path string) Attempt {
		return Attempt{Kind: Destination, Class: classify.Unix, Dest: classify.Dest{Family: unix.AF_UNIX, Path: path}}
	}
	lo := Attempt{Kind: Destination, Class: classify.Loopback,
		Dest: classify.Dest{Family: unix.AF_INET, Addr: netip.MustParseAddrPort("127.0.0.1:5432")}}
	docker := Peer{Name: "/var/run/docker.sock", PID: 123, Comm: "dockerd"}
	rule, _ := ParseRule("127.0.0.1:5432")
	other, _ := ParseRule("127.0.0.1:6379")
	tests := []struct {
		name    string
		p       Policy
		a       Attempt
		peer    Peer
		verdict audit.Decision
		reason  string
	}{
		{"unix outside", Policy{Sealed: true}, unixDest("/var/run/docker.sock"), docker, audit.Denied,
			"sealed: peer outside the tree (listener pid 123 dockerd, outside the tree)"},
		{"unix named", Policy{Sealed: true, AllowUnix: []string{"/var/run/docker.sock"}}, unixDest("docker.sock"), docker, audit.Allowed,
			"allowed: --allow-unix /var/run/docker.sock"},
		{"unix other name", Policy{Sealed: true, AllowUnix: []string{"/run/x.sock"}}, unixDest("/var/run/docker.sock"), docker, audit.Denied,
			"sealed: peer outside the tree"},
		{"unix unnamed peer", Policy{Sealed: true, AllowUnix: []string{"/run/x.sock"}}, unixDest("/run/x.sock"), Peer{Role: "receiver", UID: -1}, audit.Denied,
			"(receiver of an unknown process, outside the tree)"},
		{"unix uid only", Policy{Sealed: true}, unixDest("/run/x.sock"), Peer{Role: "receiver", UID: 0}, audit.Denied,
			"(receiver of uid 0, outside the tree)"},
		{"unix audit mode", Policy{Sealed: true, Mode: Audit}, unixDest("/var/run/docker.sock"), docker, audit.WouldDeny,
			"sealed: peer outside the tree"},
		{"loopback outside", Policy{Sealed: true, Rules: []Rule{other}}, lo, Peer{PID: 9, Comm: "proxy"}, audit.Denied,
			"(listener pid 9 proxy, outside the tree): a local service could reach the network for the caller; allow it with --allow 127.0.0.1:5432"},
		{"loopback ruled", Policy{Sealed: true, Rules: []Rule{rule}}, lo, Peer{PID: 9}, audit.Allowed,
			"allowed: --allow 127.0.0.1/32:5432"},
		{"why", Policy{Sealed: true}, lo, Peer{UID: -1, Why: "in a network namespace nettrap cannot inspect"}, audit.Denied,
			"(listener of an unknown process, in a network namespace nettrap cannot inspect)"},
	}
	for _, tt := range tests {
		d := tt.p.DecidePeer(tt.a, tt.peer)
		if d.Verdict != tt.verdict || !strings.Contains(d.Reason, tt.reason) || !d.Audit {
			t.Errorf("%s: got %v %q (audit %t); want %v with %q", tt.name, d.Verdict, d.Reason, d.Audit, tt.verdict, tt.reason)
		}
		if d.Verdict == audit.Denied && d.Errno != unix.ECONNREFUSED {
			t.Errorf("%s: errno %v, want ECONNREFUSED", tt.name, d.Errno)
		}
	}
}
