package integration

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// leakCase is an operation that must reach the fake host at want when
// nothing guards it. Every case aims at its own endpoints, so records
// cannot be confused between cases.
type leakCase struct {
	name string
	args []string
	want []fakehost.Endpoint
	data string // expected first bytes ("" for a bare connect)
}

func ep(proto, addr string) fakehost.Endpoint {
	return fakehost.Endpoint{Proto: proto, Addr: netip.MustParseAddrPort(addr)}
}

func leakCases(victim string) []leakCase {
	return []leakCase{
		{"tcp-connect", []string{"tcp-connect", "203.0.113.7:443"}, []fakehost.Endpoint{ep("tcp", "203.0.113.7:443")}, ""},
		{"tcp-connect-v6", []string{"tcp-connect", "[2001:db8::1]:80"}, []fakehost.Endpoint{ep("tcp", "[2001:db8::1]:80")}, ""},
		{"tcp-connect-v4mapped", []string{"tcp-connect", "[::ffff:192.0.2.1]:80"}, []fakehost.Endpoint{ep("tcp", "192.0.2.1:80")}, ""},
		{"tcp-connect-nb", []string{"tcp-connect-nb", "198.51.100.1:443"}, []fakehost.Endpoint{ep("tcp", "198.51.100.1:443")}, ""},
		{"net-dial", []string{"net-dial", "tcp", "172.16.0.1:80"}, []fakehost.Endpoint{ep("tcp", "172.16.0.1:80")}, "victim:net-dial"},
		{"net-dial-udp6", []string{"net-dial", "udp", "[2001:db8::53]:53"}, []fakehost.Endpoint{ep("udp", "[2001:db8::53]:53")}, "victim:net-dial"},
		{"udp-sendto", []string{"udp-sendto", "10.0.0.1:53"}, []fakehost.Endpoint{ep("udp", "10.0.0.1:53")}, "victim:udp-sendto"},
		{"udp-sendmsg", []string{"udp-sendmsg", "192.168.1.1:53"}, []fakehost.Endpoint{ep("udp", "192.168.1.1:53")}, "victim:udp-sendmsg"},
		{"udp-sendmmsg", []string{"udp-sendmmsg", "100.64.0.1:53", "169.254.169.254:53"},
			[]fakehost.Endpoint{ep("udp", "100.64.0.1:53"), ep("udp", "169.254.169.254:53")}, "victim:udp-sendmmsg"},
		{"udp-connect-write", []string{"udp-connect-write", "[fd00::1]:53"}, []fakehost.Endpoint{ep("udp", "[fd00::1]:53")}, "victim:udp-connect-write"},
		{"tcp-fastopen", []string{"tcp-fastopen", "203.0.113.7:80"}, []fakehost.Endpoint{ep("tcp", "203.0.113.7:80")}, "victim:tcp-fastopen"},
		{"unspec-sendto", []string{"unspec-sendto", "192.0.2.1:53"}, []fakehost.Endpoint{ep("udp", "192.0.2.1:53")}, "victim:unspec-sendto"},
		{"goroutine-connect", []string{"goroutine-connect", "192.0.2.53:443"}, []fakehost.Endpoint{ep("tcp", "192.0.2.53:443")}, ""},
		{"sleep-then-connect", []string{"sleep-then-connect", "0", "192.0.2.1:443"}, []fakehost.Endpoint{ep("tcp", "192.0.2.1:443")}, ""},
		{"exec", []string{"exec", victim, "tcp-connect", "10.0.0.1:443"}, []fakehost.Endpoint{ep("tcp", "10.0.0.1:443")}, ""},
		{"stub-resolver", []string{"udp-sendto", "127.0.0.53:53"}, []fakehost.Endpoint{ep("udp", "127.0.0.53:53")}, "victim:udp-sendto"},
		{"multicast", []string{"udp-sendto", fakehost.MDNSGroup.String()}, []fakehost.Endpoint{{Proto: "udp", Addr: fakehost.MDNSGroup}}, "victim:udp-sendto"},
		{"broadcast", []string{"udp-sendmsg", fakehost.BroadcastV4.String()}, []fakehost.Endpoint{{Proto: "udp", Addr: fakehost.BroadcastV4}}, "victim:udp-sendmsg"},
	}
}

// TestUnguardedOpsReachFakeHosts runs every sending operation of the victim
// WITHOUT nettrap and requires a record at the fake host: this is what
// proves that, under nettrap, an absent record means "blocked", and a
// present one is a real leak.
func TestUnguardedOpsReachFakeHosts(t *testing.T) {
	h := fakehost.Start(t, fakehost.Standard()...)
	victim := victimbuild.Victim(t)
	for _, tc := range leakCases(victim) {
		t.Run(tc.name, func(t *testing.T) {
			mark := h.Mark()
			r := runVictim(t, tc.args...)
			mustOK(t, r)
			if tc.name == "exec" {
				child := parseVictim(t, r.Child, "")
				mustOK(t, child)
			}
			for _, e := range tc.want {
				rec, ok := h.WaitFor(mark, func(r fakehost.Record) bool {
					return fakehost.To(e.Proto, e.Addr)(r) && string(r.Data) == tc.data
				}, harness.Timeout)
				if !ok {
					t.Fatalf("no record %s with data %q:\n%s", e, tc.data, h.Dump())
				}
				t.Logf("recorded: %s", rec)
			}
		})
	}
}

func TestFakeDNSAnswersVictimLookup(t *testing.T) {
	var eps []fakehost.Endpoint
	for _, ns := range sandbox.Nameservers() {
		eps = append(eps, fakehost.Both(netip.AddrPortFrom(ns, 53).String())...)
	}
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	r := runVictim(t, "lookup", "victim-probe.example")
	mustOK(t, r)
	if got := value[[]string](t, r); !slices.Equal(got, []string{fakehost.DNSAnswerV4.String()}) {
		t.Errorf("lookup answered %v, want [%s]", got, fakehost.DNSAnswerV4)
	}
	rec, ok := h.WaitFor(mark, fakehost.Queried("victim-probe.example"), harness.Timeout)
	if !ok {
		t.Fatalf("query not recorded:\n%s", h.Dump())
	}
	if !slices.Contains(sandbox.Nameservers(), rec.Local.Addr()) || rec.Local.Port() != 53 {
		t.Errorf("query went to %s, not to a sandbox nameserver", rec.Local)
	}
}

// TestUnguardedSocketsCanBeCreated: the sockets nettrap must refuse really
// are available here, so a refusal under nettrap is nettrap's doing.
func TestUnguardedSocketsCanBeCreated(t *testing.T) {
	sandbox.Require(t)
	for _, op := range []string{"raw-socket", "raw6-socket", "packet-socket", "inet-sock-packet", "netlink-raw-socket"} {
		t.Run(op, func(t *testing.T) { mustOK(t, runVictim(t, op)) })
	}
	t.Run("io-uring-setup", func(t *testing.T) {
		lab.OuterDenies(t, "io_uring_setup")
		if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && strings.TrimSpace(string(b)) != "0" {
			t.Skipf("io_uring disabled by sysctl kernel.io_uring_disabled=%s", strings.TrimSpace(string(b)))
		}
		mustOK(t, runVictim(t, "io-uring-setup"))
	})
}

func TestLocalOpsWork(t *testing.T) {
	sandbox.Require(t)
	t.Run("socketpair", func(t *testing.T) {
		r := runVictim(t, "socketpair")
		mustOK(t, r)
		if v := value[string](t, r); v != "ping" {
			t.Errorf("socketpair read %q, want ping", v)
		}
	})
	t.Run("unix-path", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s")
		ln := listenOnce(t, "unix", path)
		mustOK(t, runVictim(t, "unix-path", path))
		waitAccepted(t, ln.accepted)
	})
	t.Run("unix-abstract", func(t *testing.T) {
		name := "ntharness-" + strconv.Itoa(os.Getpid())
		ln := listenOnce(t, "unix", "@"+name)
		mustOK(t, runVictim(t, "unix-abstract", name))
		waitAccepted(t, ln.accepted)
	})
	t.Run("netlink-interfaces", func(t *testing.T) {
		r := runVictim(t, "netlink-interfaces")
		mustOK(t, r)
		if names := value[[]string](t, r); !slices.Contains(names, "lo") {
			t.Errorf("interfaces %v lack lo", names)
		}
	})
	t.Run("many-loopback", func(t *testing.T) {
		ln := listenLoopback(t)
		r := runVictim(t, "many-loopback", "64", ln.Addr().String())
		mustOK(t, r)
		if n := value[int](t, r); n != 64 {
			t.Errorf("%d of 64 connects succeeded", n)
		}
	})
}

func TestUsageErrorsExit3(t *testing.T) {
	victim := victimbuild.Victim(t)
	for _, args := range [][]string{{}, {"no-such-op"}, {"tcp-connect"}, {"tcp-connect", "not-an-addr"}, {"unspec-sendto", "[2001:db8::1]:53"}} {
		err := runExit(victim, args...)
		if code := harness.ExitCode(err); code != 3 {
			t.Errorf("victim %q: exit %d (%v), want 3", args, code, err)
		}
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// Accept and close everything, so the backlog never fills up.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}
