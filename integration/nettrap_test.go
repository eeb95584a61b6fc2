package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// TestNettrapBlocksEveryLeak runs every operation that reaches a fake host
// unguarded (see TestUnguardedOpsReachFakeHosts) under nettrap: each must
// fail with EPERM, print a denial line, and deliver nothing. The cases
// aimed at a nameserver go to nettrap's DNS sinkhole instead (the call
// succeeds, against the sinkhole), and fail with EPERM under
// --emulate=off.
func TestNettrapBlocksEveryLeak(t *testing.T) {
	h := fakehost.Start(t, fakehost.Standard()...)
	victim := victimbuild.Victim(t)
	sinkholed := map[string]bool{"net-dial-udp6": true, "stub-resolver": true}
	for _, tc := range leakCases(victim) {
		modes := []string{"auto"}
		if sinkholed[tc.name] {
			modes = append(modes, "off")
		}
		for _, mode := range modes {
			t.Run(tc.name+"/emulate="+mode, func(t *testing.T) {
				mark := h.Mark()
				run, r := confinedVictim(t, []string{"--emulate=" + mode}, tc.args...)
				if tc.name == "exec" {
					r = parseVictim(t, r.Child, run.Stderr)
				}
				switch {
				case sinkholed[tc.name] && mode == "auto":
					if !r.OK {
						t.Errorf("victim %s under nettrap: ok=%v errno=%q err=%q, want it redirected to the sinkhole", tc.args, r.OK, r.Errno, r.Err)
					}
				case r.OK || r.Errno != "EPERM":
					t.Errorf("victim %s under nettrap: ok=%v errno=%q err=%q, want EPERM", tc.args, r.OK, r.Errno, r.Err)
				}
				if len(harness.BlockedLines(run.Stderr)) == 0 {
					t.Errorf("no denial line on stderr:\n%s", run.Stderr)
				}
				harness.AssertNothingArrived(t, h, mark, tc.want...)
			})
		}
	}
}

// TestNettrapDeniesRawSockets: sockets that need no destination to send.
func TestNettrapDeniesRawSockets(t *testing.T) {
	for _, op := range []string{"raw-socket", "raw6-socket", "packet-socket", "inet-sock-packet", "io-uring-setup"} {
		t.Run(op, func(t *testing.T) {
			run, r := confinedVictim(t, nil, op)
			if r.OK || r.Errno != "EPERM" {
				t.Errorf("%s under nettrap: ok=%v errno=%q err=%q, want EPERM\nstderr: %s", op, r.OK, r.Errno, r.Err, run.Stderr)
			}
		})
	}
}

// TestNettrapDeniesI386 guards the other ABI: an i386 connect must not pass.
func TestNettrapDeniesI386(t *testing.T) {
	requireI386(t)
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"))
	for _, op := range []string{"i386-connect", "i386-connect-direct"} {
		t.Run(op, func(t *testing.T) {
			mark := h.Mark()
			run, r := confinedVictim(t, nil, op, "203.0.113.7:443")
			if r.OK {
				t.Errorf("%s under nettrap succeeded\nstderr: %s", op, run.Stderr)
			}
			harness.AssertNothingArrived(t, h, mark, fakehost.TCP("203.0.113.7:443"))
		})
	}
}

// TestNettrapDeniesLookup: the resolver's query to the resolv.conf
// nameserver is class dns and denied; no query (over UDP or TCP) reaches
// the fake DNS. Where nettrap emulates, the query goes to its sinkhole,
// which answers REFUSED (the lookup fails at once, not by timeout) and
// names what was looked up; without emulation the connect fails (EPERM).
func TestNettrapDeniesLookup(t *testing.T) {
	eps := append(fakehost.Both("192.0.2.53:53"), fakehost.Both("[2001:db8::53]:53")...)
	h := fakehost.Start(t, eps...)
	for _, tc := range []struct {
		emulate, op, name string
		want              []string // in the blocked lines
	}{
		{"auto", "lookup", "blocked-probe.example", []string{
			"nettrap: DNS lookup blocked: blocked-probe.example by pid "}},
		{"auto", "lookup-txt", "_grpc_config.localhost", []string{
			"nettrap: DNS lookup blocked: _grpc_config.localhost by pid "}},
		{"off", "lookup", "blocked-probe.example", []string{
			"nettrap: Outbound network blocked: connect udp 192.0.2.53:53 (dns) by pid "}},
	} {
		t.Run(tc.emulate+"/"+tc.op, func(t *testing.T) {
			mark := h.Mark()
			log := harness.AuditPath(t)
			run, r := confinedVictim(t, []string{"--emulate=" + tc.emulate, "--audit-log", log}, tc.op, tc.name)
			if r.OK {
				t.Errorf("lookup under nettrap succeeded: %s\nstderr: %s", r.Value, run.Stderr)
			}
			lines := strings.Join(harness.BlockedLines(run.Stderr), "\n")
			for _, w := range tc.want {
				if !strings.Contains(lines, w) {
					t.Errorf("no line %q in:\n%s", w, run.Stderr)
				}
			}
			if tc.emulate == "auto" {
				if n := len(harness.BlockedLines(run.Stderr)); n != 1 {
					t.Errorf("%d lines, want one for the lookup, whatever queries it made:\n%s", n, run.Stderr)
				}
				if !strings.Contains(r.Err, "server misbehaving") {
					t.Errorf("lookup error %q, want the resolver's answer to REFUSED (server misbehaving)", r.Err)
				}
				recs := harness.ReadAudit(t, log)
				if !slices.ContainsFunc(recs, func(a harness.AuditRecord) bool { return strings.HasSuffix(a.Lookup, " "+tc.name) && a.Class == "dns" }) {
					t.Errorf("no audit record names %s: %+v", tc.name, recs)
				}
				if tc.op == "lookup" && (!slices.ContainsFunc(recs, func(a harness.AuditRecord) bool { return a.Lookup == "A "+tc.name }) ||
					!slices.ContainsFunc(recs, func(a harness.AuditRecord) bool { return a.Lookup == "AAAA "+tc.name })) {
					t.Errorf("the records do not keep each query (A and AAAA): %+v", recs)
				}
			}
			harness.AssertNothingArrived(t, h, mark, eps...)
		})
	}
}

// TestNettrapAllowsLocal: loopback, Unix sockets and netlink keep working.
func TestNettrapAllowsLocal(t *testing.T) {
	t.Run("loopback", func(t *testing.T) {
		ln := listenOnce(t, "tcp", "127.0.0.1:0")
		_, r := confinedVictim(t, nil, "tcp-connect", ln.addr)
		mustOK(t, r)
		waitAccepted(t, ln.accepted)
	})
	t.Run("many-loopback", func(t *testing.T) {
		ln := listenLoopback(t)
		_, r := confinedVictim(t, nil, "many-loopback", "64", ln.Addr().String())
		mustOK(t, r)
		if n := value[int](t, r); n != 64 {
			t.Errorf("%d of 64 loopback connects succeeded", n)
		}
	})
	for _, op := range []string{"socketpair", "netlink-interfaces", "netlink-raw-socket"} {
		t.Run(op, func(t *testing.T) {
			_, r := confinedVictim(t, nil, op)
			mustOK(t, r)
		})
	}
	t.Run("unix-path", func(t *testing.T) {
		path := t.TempDir() + "/s"
		ln := listenOnce(t, "unix", path)
		_, r := confinedVictim(t, nil, "unix-path", path)
		mustOK(t, r)
		waitAccepted(t, ln.accepted)
	})
}

// TestNettrapAllowRule: --allow opens exactly the given address and port.
func TestNettrapAllowRule(t *testing.T) {
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"), fakehost.TCP("203.0.113.7:80"))
	flags := []string{"--allow", "203.0.113.7/32:443"}
	mark := h.Mark()
	_, r := confinedVictim(t, flags, "tcp-connect", "203.0.113.7:443")
	mustOK(t, r)
	if _, ok := h.WaitFor(mark, fakehost.To("tcp", fakehost.TCP("203.0.113.7:443").Addr), harness.Timeout); !ok {
		t.Fatalf("allowed connect not recorded:\n%s", h.Dump())
	}
	mark = h.Mark()
	_, r = confinedVictim(t, flags, "tcp-connect", "203.0.113.7:80")
	if r.OK || r.Errno != "EPERM" {
		t.Errorf("port 80 outside the rule: ok=%v errno=%q, want EPERM", r.OK, r.Errno)
	}
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("203.0.113.7:80"))
}

// TestNettrapAuditLog checks the JSONL record of a denial.
func TestNettrapAuditLog(t *testing.T) {
	log := harness.AuditPath(t)
	run, r := confinedVictim(t, []string{"--audit-log", log}, "tcp-connect", "203.0.113.7:443")
	if r.Errno != "EPERM" {
		t.Fatalf("errno %q, want EPERM\nstderr: %s", r.Errno, run.Stderr)
	}
	recs := harness.ReadAudit(t, log)
	i := slices.IndexFunc(recs, func(a harness.AuditRecord) bool { return a.Dest == "203.0.113.7:443" })
	if i < 0 {
		t.Fatalf("no audit record for 203.0.113.7:443: %+v", recs)
	}
	a := recs[i]
	if a.Decision != "denied" || a.Class != "external" || a.Syscall != "connect" {
		t.Errorf("record %+v: want decision denied, class external, syscall connect", a)
	}
	if len(a.Schema) == 0 || a.Time == "" || a.RunID == "" || a.PID == 0 || a.TID == 0 || a.Exe == "" || a.Argv0 == "" || a.Reason == "" {
		t.Errorf("record lacks fields: %+v", a)
	}
	line := harness.BlockedLines(run.Stderr)
	if len(line) != 1 || !strings.Contains(line[0], "connect tcp 203.0.113.7:443 (external)") {
		t.Errorf("denial lines %q", line)
	}
}

// TestNettrapAuditMode lets the call through and records would-deny.
func TestNettrapAuditMode(t *testing.T) {
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"))
	log := harness.AuditPath(t)
	mark := h.Mark()
	_, r := confinedVictim(t, []string{"--mode=audit", "--audit-log", log}, "tcp-connect", "203.0.113.7:443")
	mustOK(t, r)
	if _, ok := h.WaitFor(mark, fakehost.To("tcp", fakehost.TCP("203.0.113.7:443").Addr), harness.Timeout); !ok {
		t.Fatalf("audit mode did not let the connect through:\n%s", h.Dump())
	}
	recs := harness.ReadAudit(t, log)
	if !slices.ContainsFunc(recs, func(a harness.AuditRecord) bool {
		return a.Dest == "203.0.113.7:443" && a.Decision == "would-deny"
	}) {
		t.Errorf("no would-deny record: %+v", recs)
	}
}

func TestNettrapExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--", "/bin/sh", "-c", "exit 7"}, 7},
		{[]string{"--", "/bin/sh", "-c", "kill -9 $$"}, 128 + 9},
		{[]string{"--no-such-flag", "--", "/bin/true"}, 125},
		{[]string{"--", "/nonexistent/program"}, 127},
	} {
		if run := harness.RunNettrap(t, tc.args...); run.Code != tc.want {
			t.Errorf("nettrap %q: exit %d, want %d\nstderr: %s", tc.args, run.Code, tc.want, run.Stderr)
		}
	}
}

// TestNettrapGenericDenialFailsRun: a command that swallows a denied
// attempt and exits 0 makes nettrap exit 1 (docs/audit.md#exit-status); its own non-zero
// status is kept; audit mode denies nothing and keeps 0.
func TestNettrapGenericDenialFailsRun(t *testing.T) {
	ep := fakehost.TCP("203.0.113.7:4444")
	h := fakehost.Start(t, ep)
	dial := "exec 3<>/dev/tcp/203.0.113.7/4444 || echo swallowed >&2; "
	for _, tc := range []struct {
		name  string
		args  []string
		want  int
		leaks bool
	}{
		{"swallowed", []string{"--", "bash", "-c", dial + "exit 0"}, 1, false},
		{"own status", []string{"--", "bash", "-c", dial + "exit 3"}, 3, false},
		{"no attempt", []string{"--", "bash", "-c", "exit 0"}, 0, false},
		{"audit mode", []string{"--mode=audit", "--", "bash", "-c", dial + "exit 0"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := h.Mark()
			run := harness.RunNettrap(t, tc.args...)
			if run.Code != tc.want {
				t.Errorf("nettrap %q: exit %d, want %d\nstderr: %s", tc.args, run.Code, tc.want, run.Stderr)
			}
			if tc.want == 1 && !strings.Contains(run.Stderr, "attempt(s) were denied") {
				t.Errorf("no reason for exit 1 on stderr:\n%s", run.Stderr)
			}
			if tc.leaks {
				return // audit mode lets it through, by design
			}
			harness.AssertNothingArrived(t, h, mark, ep)
		})
	}
}
