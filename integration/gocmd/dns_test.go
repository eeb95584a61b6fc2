package gocmd

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// TestLookupFailsTheTest: a test binary whose test looks a name up and
// swallows the error fails that test, and the line under it names what
// was looked up, once: the resolver's queries (one per nameserver, and
// tried again) are one lookup, each query a record of the audit log. The
// resolver got REFUSED at once and the fake nameservers received
// nothing.
func TestLookupFailsTheTest(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "lookup")
	eps := append(fakehost.Both("192.0.2.53:53"), fakehost.Both("[2001:db8::53]:53")...)
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	log := harness.AuditPath(t)
	run := runConfined(t, filepath.Join(bins, "lookup.test"), "lookup", []string{"--audit-log", log}, []string{"-test.v"})
	if run.Code != 1 {
		t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", run.Code, run.Stdout, run.Stderr)
	}
	for _, want := range []string{
		"nettrap: DNS lookup blocked: _grpc_config.localhost during TestLookupSwallowed",
		"--- FAIL: TestLookupSwallowed",
		"server misbehaving",
		"--- PASS: TestClean",
	} {
		if !strings.Contains(run.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, run.Stdout)
		}
	}
	// The line ends with what to do (audit.RemedyLookupTest), after where
	// the lookup was made.
	remedy := regexp.MustCompile(`during TestLookupSwallowed at lookup/lookup_test\.go:\d+ \(lookup\.TestLookupSwallowed\): mock the resolver or the client, or mark the test \(docs/tests\.md#the-marker\)`)
	if !remedy.MatchString(run.Stdout) {
		t.Errorf("output lacks %v:\n%s", remedy, run.Stdout)
	}
	if n := strings.Count(run.Stdout, "nettrap: DNS lookup blocked: "); n != 1 {
		t.Errorf("%d lines of the lookup, want one:\n%s", n, run.Stdout)
	}
	// One record per query, each naming the lookup: at least one per
	// nameserver asked.
	recs := readRunAudit(t, log)
	dests := map[string]bool{}
	for _, r := range recs {
		if r.Lookup != "TXT _grpc_config.localhost" || r.Test != "TestLookupSwallowed" || r.Decision != "denied" {
			t.Errorf("audit record %+v, want a denial of TXT _grpc_config.localhost in TestLookupSwallowed", r)
		}
		dests[r.Dest] = true
	}
	if !dests["192.0.2.53:53"] || !dests["[2001:db8::53]:53"] {
		t.Errorf("audit records name nameservers %v, want both of resolv.conf", dests)
	}
	harness.AssertNothingArrived(t, h, mark, eps...)
}
