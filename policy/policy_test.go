package policy

import (
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
)

func dest(t *testing.T, s string) (classify.Dest, classify.Class) {
	t.Helper()
	ap := netip.MustParseAddrPort(s)
	fam := uint16(unix.AF_INET6)
	if ap.Addr().Is4() {
		fam = unix.AF_INET
	}
	d := classify.Dest{Family: fam, Addr: ap}
	return d, (&classify.Resolvers{}).Classify(d)
}

func TestDecide(t *testing.T) {
	rules := []Rule{mustRule(t, "192.0.2.0/24:443"), mustRule(t, "::/128")}
	tests := []struct {
		name    string
		p       Policy
		dest    string
		ctx     Context
		verdict audit.Decision
		audit   bool
		errno   unix.Errno
	}{
		{"loopback", Policy{}, "127.0.0.1:80", Context{}, audit.Allowed, false, 0},
		{"external", Policy{}, "203.0.113.7:443", Context{}, audit.Denied, true, unix.EPERM},
		{"external errno", Policy{Errno: unix.ECONNREFUSED}, "203.0.113.7:443", Context{}, audit.Denied, true, unix.ECONNREFUSED},
		{"private", Policy{}, "10.0.0.1:80", Context{}, audit.Denied, true, unix.EPERM},
		{"rule", Policy{Rules: rules}, "192.0.2.7:443", Context{}, audit.Allowed, true, 0},
		{"rule wrong port", Policy{Rules: rules}, "192.0.2.7:80", Context{}, audit.Denied, true, unix.EPERM},
		{"rule unspecified", Policy{Rules: rules}, "[::]:8080", Context{}, audit.Allowed, true, 0},
		{"unspecified v4 not covered", Policy{Rules: rules}, "0.0.0.0:8080", Context{}, audit.Denied, true, unix.EPERM},
		{"audit mode", Policy{Mode: Audit}, "203.0.113.7:443", Context{}, audit.WouldDeny, true, 0},
		{"marked", Policy{}, "203.0.113.7:443", Context{Marked: true}, audit.Allowed, true, 0},
		{"marked at collection", Policy{}, "203.0.113.7:443", Context{Marked: true, Collection: true}, audit.Denied, true, unix.EPERM},
		{"toolchain", Policy{}, "203.0.113.7:443", Context{Toolchain: true}, audit.Allowed, true, 0},
		{"toolchain sealed", Policy{Sealed: true}, "203.0.113.7:443", Context{Toolchain: true}, audit.Allowed, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, cls := dest(t, tt.dest)
			got := tt.p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls, Context: tt.ctx})
			if got.Verdict != tt.verdict || got.Audit != tt.audit || got.Errno != tt.errno {
				t.Errorf("Decide(%s) = %+v, want verdict %s audit %v errno %v", tt.dest, got, tt.verdict, tt.audit, tt.errno)
			}
			if got.Reason == "" {
				t.Errorf("Decide(%s) gave no reason", tt.dest)
			}
		})
	}
}

// An AF_UNSPEC send read both as IPv4 and IPv6 is allowed by a rule only
// if the rule covers both readings.
func TestRuleMustCoverBothUnspecReadings(t *testing.T) {
	d := classify.Dest{Family: unix.AF_INET, Unspec: true,
		Addr:    netip.MustParseAddrPort("192.0.2.7:443"),
		Unspec6: netip.MustParseAddrPort("[2001:db8::7]:443")}
	cls := (&classify.Resolvers{}).Classify(d)
	p := Policy{Rules: []Rule{mustRule(t, "192.0.2.0/24")}}
	if got := p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls}); got.Verdict != audit.Denied {
		t.Errorf("rule covering only the IPv4 reading: %+v, want denied", got)
	}
	p.Rules = append(p.Rules, mustRule(t, "2001:db8::/32"))
	if got := p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls}); got.Verdict != audit.Allowed {
		t.Errorf("rules covering both readings: %+v, want allowed", got)
	}
}

func TestDecideNonDestinations(t *testing.T) {
	for _, k := range []Kind{RawSocket, IOURing, ForeignABI, SCTPSocket, CrossProcess, SourceRoute, FamilySocket, InterfacePin} {
		p := Policy{Rules: []Rule{mustRule(t, "0.0.0.0/0")}}
		if d := p.Decide(Attempt{Kind: k, Context: Context{Marked: true}}); d.Verdict != audit.Denied || d.Errno != unix.EPERM {
			t.Errorf("kind %d: %+v, want denied with EPERM whatever the rules and markers", k, d)
		}
		if d := p.Decide(Attempt{Kind: k, Context: Context{Toolchain: true}}); d.Verdict != audit.Denied {
			t.Errorf("kind %d from the go command: %+v, want denied", k, d)
		}
		p.Mode = Audit
		if d := p.Decide(Attempt{Kind: k}); d.Verdict != audit.WouldDeny {
			t.Errorf("kind %d in audit mode: %+v, want would-deny", k, d)
		}
	}
}

func TestMulticastJoin(t *testing.T) {
	join := func(group string) Attempt {
		g := netip.MustParseAddr(group)
		fam := uint16(unix.AF_INET)
		if g.Is6() {
			fam = unix.AF_INET6
		}
		return Attempt{Kind: MulticastJoin, Detail: "IP_ADD_MEMBERSHIP",
			Dest: classify.Dest{Family: fam, Addr: netip.AddrPortFrom(g, 0)}, Class: classify.ClassifyAddr(g)}
	}
	p := Policy{}
	d := p.Decide(join("239.1.2.3"))
	if d.Verdict != audit.Denied || d.Errno != unix.EPERM || !strings.Contains(d.Reason, "--allow 239.1.2.3") {
		t.Errorf("join without a rule: %+v", d)
	}
	// The rule's port does not matter: a join has none.
	p.Rules = []Rule{mustRule(t, "224.0.0.251:5353"), mustRule(t, "[ff02::fb]:5353")}
	for _, g := range []string{"224.0.0.251", "ff02::fb"} {
		if d := p.Decide(join(g)); d.Verdict != audit.Allowed || !d.Audit {
			t.Errorf("join %s with a covering rule: %+v", g, d)
		}
	}
	if d := p.Decide(join("224.0.0.252")); d.Verdict != audit.Denied {
		t.Errorf("join of a group no rule covers: %+v", d)
	}
	a := join("239.9.9.9")
	a.Context.Marked = true
	if d := p.Decide(a); d.Verdict != audit.Allowed {
		t.Errorf("marked test's join: %+v", d)
	}
	a.Context.Collection = true
	if d := p.Decide(a); d.Verdict != audit.Denied {
		t.Errorf("join at collection time: %+v", d)
	}
	p.Mode = Audit
	if d := p.Decide(join("239.1.2.3")); d.Verdict != audit.WouldDeny {
		t.Errorf("join in audit mode: %+v", d)
	}
}

func TestUnspecifiedAdvice(t *testing.T) {
	d, cls := dest(t, "[::]:41234")
	got := (&Policy{}).Decide(Attempt{Kind: Destination, Dest: d, Class: cls})
	for _, want := range []string{"not loopback", "127.0.0.1:0", "--allow-unspecified", "NETTRAP_ALLOW_UNSPECIFIED=1"} {
		if !strings.Contains(got.Reason, want) {
			t.Errorf("reason %q lacks %q", got.Reason, want)
		}
	}
}

// --allow-unspecified lets 0.0.0.0, :: and the v4-mapped ::ffff:0.0.0.0
// through, audited like a call an --allow rule lets through (the reason
// names the flag), in both modes, and nothing else.
func TestAllowUnspecified(t *testing.T) {
	for _, mode := range []Mode{Enforce, Audit} {
		p := &Policy{Mode: mode, AllowUnspecified: true}
		for _, addr := range []string{"0.0.0.0:80", "[::]:41234", "[::ffff:0.0.0.0]:9"} {
			d, cls := dest(t, addr)
			got := p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls})
			if got.Verdict != audit.Allowed || !got.Audit || got.Reason != "allowed: --allow-unspecified" {
				t.Errorf("%v %s: %+v, want allowed, audited, reason allowed: --allow-unspecified", mode, addr, got)
			}
		}
		for _, addr := range []string{"0.0.0.1:80", "203.0.113.7:443", "[::2]:80", "10.0.0.1:80"} {
			d, cls := dest(t, addr)
			if got := p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls}); got.Verdict == audit.Allowed {
				t.Errorf("%v %s: allowed by --allow-unspecified: %+v", mode, addr, got)
			}
		}
	}
	d, cls := dest(t, "[::]:41234")
	if got := (&Policy{}).Decide(Attempt{Kind: Destination, Dest: d, Class: cls}); got.Verdict != audit.Denied {
		t.Errorf("without the opt-in: %+v, want denied", got)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"enforce": Enforce, "audit": Audit, "AUDIT": Audit} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode("permissive"); err == nil {
		t.Error("ParseMode(permissive) did not fail")
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Under --sealed the marker is the untrusted code's own word: it never
// allows, and the denial says it was ignored. Only rules open anything.
func TestSealed(t *testing.T) {
	rules := []Rule{mustRule(t, "192.0.2.0/24:443")}
	tests := []struct {
		name    string
		p       Policy
		dest    string
		ctx     Context
		verdict audit.Decision
		ignored bool // the reason names the ignored marker
	}{
		{"marked external", Policy{Sealed: true}, "203.0.113.7:443", Context{Marked: true}, audit.Denied, true},
		{"marked private", Policy{Sealed: true}, "10.0.0.1:80", Context{Marked: true}, audit.Denied, true},
		{"marked audit mode", Policy{Sealed: true, Mode: Audit}, "203.0.113.7:443", Context{Marked: true}, audit.WouldDeny, true},
		{"unmarked external", Policy{Sealed: true}, "203.0.113.7:443", Context{}, audit.Denied, false},
		{"marked at collection", Policy{Sealed: true}, "203.0.113.7:443", Context{Marked: true, Collection: true}, audit.Denied, false},
		{"rule", Policy{Sealed: true, Rules: rules}, "192.0.2.7:443", Context{}, audit.Allowed, false},
		{"marked and ruled", Policy{Sealed: true, Rules: rules}, "192.0.2.7:443", Context{Marked: true}, audit.Allowed, false},
		{"loopback", Policy{Sealed: true}, "127.0.0.1:80", Context{Marked: true}, audit.Allowed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, cls := dest(t, tt.dest)
			got := tt.p.Decide(Attempt{Kind: Destination, Dest: d, Class: cls, Context: tt.ctx})
			if got.Verdict != tt.verdict {
				t.Fatalf("Decide(%s) = %+v, want %s", tt.dest, got, tt.verdict)
			}
			if has := strings.Contains(got.Reason, audit.ReasonMarkerIgnored); has != tt.ignored {
				t.Errorf("reason %q: names the ignored marker %v, want %v", got.Reason, has, tt.ignored)
			}
			if tt.verdict == audit.Denied && got.Errno != unix.EPERM {
				t.Errorf("errno %v, want EPERM", got.Errno)
			}
		})
	}
	// The same marked attempt is allowed without --sealed.
	d, cls := dest(t, "203.0.113.7:443")
	if got := (&Policy{}).Decide(Attempt{Kind: Destination, Dest: d, Class: cls, Context: Context{Marked: true}}); got.Verdict != audit.Allowed {
		t.Errorf("unsealed marked attempt %+v, want allowed", got)
	}
}

// TestNetnsKinds: a change to the starting namespace and an address
// rewriting BPF attach are denied in every mode, whatever the marker or
// the rules say (audit mode records them as would-deny); a harmless one
// (the test's own namespace, a program that redirects nothing) passes
// unaudited, except under --sealed.
func TestNetnsKinds(t *testing.T) {
	all := []Rule{mustRule(t, "0.0.0.0/0"), mustRule(t, "::/0")}
	marked := Context{Marked: true}
	tests := []struct {
		name    string
		p       Policy
		a       Attempt
		verdict audit.Decision
		audit   bool
	}{
		{"route", Policy{}, Attempt{Kind: NetnsChange, Detail: "ioctl SIOCADDRT"}, audit.Denied, true},
		{"route marked, every rule", Policy{Rules: all}, Attempt{Kind: NetnsChange, Detail: "netlink RTM_NEWROUTE", Context: marked}, audit.Denied, true},
		{"route audit mode", Policy{Mode: Audit}, Attempt{Kind: NetnsChange, Detail: "ioctl SIOCADDRT"}, audit.WouldDeny, true},
		{"route sealed", Policy{Sealed: true}, Attempt{Kind: NetnsChange, Detail: "ioctl SIOCADDRT"}, audit.Denied, true},
		{"own netns", Policy{}, Attempt{Kind: NetnsChange, Detail: "ioctl SIOCADDRT", Harmless: true}, audit.Allowed, false},
		{"own netns sealed", Policy{Sealed: true}, Attempt{Kind: NetnsChange, Detail: "ioctl SIOCADDRT", Harmless: true}, audit.Denied, true},
		{"connect4 attach", Policy{}, Attempt{Kind: BPFAttach, Detail: "BPF_LINK_CREATE BPF_CGROUP_INET4_CONNECT"}, audit.Denied, true},
		{"connect4 attach marked", Policy{Rules: all}, Attempt{Kind: BPFAttach, Detail: "BPF_PROG_ATTACH BPF_CGROUP_INET4_CONNECT", Context: marked}, audit.Denied, true},
		{"ingress attach", Policy{}, Attempt{Kind: BPFAttach, Detail: "BPF_LINK_CREATE BPF_CGROUP_INET_INGRESS", Harmless: true}, audit.Allowed, false},
		{"ingress attach sealed", Policy{Sealed: true}, Attempt{Kind: BPFAttach, Detail: "BPF_LINK_CREATE BPF_CGROUP_INET_INGRESS", Harmless: true}, audit.Denied, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.Decide(tt.a)
			if got.Verdict != tt.verdict || got.Audit != tt.audit {
				t.Errorf("Decide(%+v) = %+v, want %s audit %v", tt.a, got, tt.verdict, tt.audit)
			}
			if got.Verdict == audit.Denied && got.Errno != unix.EPERM {
				t.Errorf("denied with %v, want EPERM", got.Errno)
			}
			if got.Verdict != audit.Allowed && !strings.Contains(got.Reason, tt.a.Detail) {
				t.Errorf("reason %q does not name %q", got.Reason, tt.a.Detail)
			}
		})
	}
}

// A marked test's allowed call names what let it through: the marker, or
// the --allow-test rules as written (quoted as a shell would take them),
// or both; a join alike. Under --sealed neither opens anything.
func TestMarkedReason(t *testing.T) {
	d, cls := dest(t, "203.0.113.7:443")
	for _, tc := range []struct {
		ctx  Context
		want string
	}{
		{Context{Marked: true, Marker: true}, "allowed: marked test"},
		{Context{Marked: true}, "allowed: marked test"},
		{Context{Marked: true, AllowTest: []string{"prices.^TestExternal$"}}, "allowed: --allow-test 'prices.^TestExternal$'"},
		{Context{Marked: true, AllowTest: []string{"^TestA$", "TestA|TestB"}}, "allowed: --allow-test '^TestA$', --allow-test 'TestA|TestB'"},
		{Context{Marked: true, Marker: true, AllowTest: []string{"^TestLive"}}, "allowed: marked test and --allow-test '^TestLive'"},
		{Context{Marked: true, AllowTest: []string{"it's"}}, `allowed: --allow-test 'it'\''s'`},
	} {
		got := (&Policy{}).Decide(Attempt{Kind: Destination, Dest: d, Class: cls, Context: tc.ctx})
		if got.Verdict != audit.Allowed || !got.Audit || got.Reason != tc.want {
			t.Errorf("%+v: %+v, want allowed, audited, %q", tc.ctx, got, tc.want)
		}
		g := netip.MustParseAddr("239.9.9.9")
		join := Attempt{Kind: MulticastJoin, Detail: "IP_ADD_MEMBERSHIP", Context: tc.ctx,
			Dest: classify.Dest{Family: unix.AF_INET, Addr: netip.AddrPortFrom(g, 0)}, Class: classify.ClassifyAddr(g)}
		if got := (&Policy{}).Decide(join); got.Verdict != audit.Allowed || got.Reason != tc.want {
			t.Errorf("join, %+v: %+v, want allowed, %q", tc.ctx, got, tc.want)
		}
	}
	sealed := &Policy{Sealed: true}
	if got := sealed.Decide(Attempt{Kind: Destination, Dest: d, Class: cls, Context: Context{Marked: true, Marker: true}}); got.Verdict != audit.Denied {
		t.Errorf("--sealed, marked: %+v, want denied", got)
	}
}
