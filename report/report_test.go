package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/policy"
)

// TestNoTimingHint: a log written when records had after_test (the
// timing guess) still reads, and nothing of it shows: no row names the
// test that ended before, no line hints at it.
func TestNoTimingHint(t *testing.T) {
	s := Build(readFixture(t), "r1")
	var text, md, js bytes.Buffer
	s.Text(&text)
	s.Markdown(&md, 0)
	s.JSON(&js)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String(), "json": js.String()} {
		for _, absent := range []string{"hint", "after_test", "left running", "TestResolvers/dns"} {
			if strings.Contains(out, absent) {
				t.Errorf("%s summary has %q:\n%s", name, absent, out)
			}
		}
	}
}

// TestGoldenStack: rows of attempts whose stack was read say where, and
// name the test whose goroutine made one before the test that ran; a row
// without a stack says what it said (a dash). Stacks prints each row's
// whole stack.
func TestGoldenStack(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "stack.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := Read(f, "stack.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := Build(recs, "")
	goldenFormats(t, s, "stack")
	// nettrap report --stacks: each row's whole stack, as the log has it.
	var stacks bytes.Buffer
	if err := s.Stacks(&stacks); err != nil {
		t.Fatal(err)
	}
	golden(t, "stack.stacks.txt", stacks.Bytes())
	if len(s.Blocked) != 3 || s.Blocked[2].Who() != "TestLeak (its goroutine, during TestOK)" ||
		s.Blocked[1].Path != "/home/u/shop/prices/client.go" || s.Blocked[1].Count != 2 {
		t.Errorf("blocked rows %+v", s.Blocked)
	}
}

// goldenFormats compares s as text, Markdown and JSON with
// testdata/NAME.txt, .md and .json.
func goldenFormats(t *testing.T, s *Summary, name string) {
	t.Helper()
	var text, md, js bytes.Buffer
	if err := s.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := s.Markdown(&md, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.JSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, name+".txt", text.Bytes())
	golden(t, name+".md", md.Bytes())
	golden(t, name+".json", js.Bytes())
}

// TestGoldenLookup: a lookup is one event: its queries (A and AAAA, at
// each nameserver, tried again) are one row per name per test and
// place, one attempt in the totals, their count and nameservers in the
// row; the same name in another test, or from another place, is another
// row. A retry loop's identical dials are one row, counted.
func TestGoldenLookup(t *testing.T) {
	recs, err := ReadFiles(filepath.Join("testdata", "lookup.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := Build(recs, "r1")
	goldenFormats(t, s, "lookup")
	if len(s.Blocked) != 5 || s.Totals.Blocked != 7 {
		t.Errorf("%d rows, %d attempts; want 5 rows (4 lookups, 1 retried dial), 7 attempts (the dial's 3)", len(s.Blocked), s.Totals.Blocked)
	}
	for _, r := range s.Blocked {
		if r.Test == "TestLookup" && (r.Queries != 8 || r.Count != 1 || r.Dest != "192.0.2.53:53, [2001:db8::53]:53") {
			t.Errorf("TestLookup's row %+v, want one attempt of 8 queries via both nameservers", r)
		}
	}
}

// A stale-marker record leaves out the fields of an attempt; an old one
// with "pid":0 (as in testdata/run.jsonl) still reads.
func TestStaleRecordOmitsAttemptFields(t *testing.T) {
	b, err := json.Marshal(audit.Record{Schema: 1, Package: "p", Test: "TestOld", Marked: true, Decision: audit.StaleMarker})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"pid", "tid", "syscall", "where", "stack"} {
		if strings.Contains(string(b), `"`+absent+`"`) {
			t.Errorf("%s has %q", b, absent)
		}
	}
	recs, err := Read(strings.NewReader(string(b)+"\n"), "log")
	if err != nil || len(recs) != 1 || recs[0].Decision != audit.StaleMarker {
		t.Errorf("Read(%s) = %+v, %v", b, recs, err)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func readFixture(t *testing.T) []audit.Record {
	t.Helper()
	recs, err := ReadFiles(filepath.Join("testdata", "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestGolden(t *testing.T) {
	s := Build(readFixture(t), "r1")
	s.Logs = []string{"/tmp/nettrap-run/audit.jsonl"}
	var text, md, js bytes.Buffer
	if err := s.Text(&text); err != nil {
		t.Fatal(err)
	}
	if err := s.Markdown(&md, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.JSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.txt", text.Bytes())
	golden(t, "run.md", md.Bytes())
	golden(t, "run.json", js.Bytes())
}

func TestBuildCounts(t *testing.T) {
	s := Build(readFixture(t), "r1")
	want := Totals{Blocked: 9, Collection: 1, Allowed: 1, Stale: 1, BadMarkers: 1, UnusedRules: 1, Packages: 5, BlockedPackages: 5}
	if s.Totals != want {
		t.Errorf("totals %+v, want %+v", s.Totals, want)
	}
	if len(s.RunIDs) != 1 || s.RunIDs[0] != "r1" {
		t.Errorf("run ids %v, want [r1]: the other run's record must be left out", s.RunIDs)
	}
	var fetch *Row
	for i := range s.Blocked {
		if s.Blocked[i].Test == "TestFetch" {
			fetch = &s.Blocked[i]
		}
	}
	if fetch == nil || fetch.Count != 2 || fetch.Dest != "203.0.113.7:443" || fetch.Operation != "connect tcp" {
		t.Errorf("TestFetch row %+v, want the two connects counted in one row", fetch)
	}
	if len(s.Collection) != 1 || s.Collection[0].Package != "example.com/m/mainleak" {
		t.Errorf("collection rows %+v", s.Collection)
	}
}

func TestBuildAllRuns(t *testing.T) {
	s := Build(readFixture(t), "")
	if len(s.RunIDs) != 2 || s.Totals.Blocked != 10 {
		t.Errorf("merged logs: runs %v, blocked %d; want 2 runs, 6 blocked", s.RunIDs, s.Totals.Blocked)
	}
}

func TestCleanIsOneLine(t *testing.T) {
	recs := []audit.Record{{Schema: 1, RunID: "r9", Package: "p", Test: "TestLive", Marked: true,
		Syscall: "connect", Dest: "192.0.2.1:80", Class: "external", Decision: audit.Allowed, Reason: "allowed: marked test"}}
	for name, s := range map[string]*Summary{"empty": Build(nil, ""), "allowed only": Build(recs, "r9")} {
		var b bytes.Buffer
		if err := s.Text(&b); err != nil {
			t.Fatal(err)
		}
		if !s.Clean() || strings.Count(b.String(), "\n") != 1 || !strings.Contains(b.String(), "no outbound network attempt blocked") {
			t.Errorf("%s: want one line saying nothing was blocked, got %q", name, b.String())
		}
	}
}

// TestOwnNetnsCounted: calls allowed in the tests' own namespaces are
// counted apart from markers and rules in the headline.
func TestOwnNetnsCounted(t *testing.T) {
	recs := []audit.Record{
		{Schema: 1, RunID: "r9", Package: "p", Test: "TestTopology", Syscall: "connect", Dest: "192.0.2.1:80",
			Class: "own-netns", Decision: audit.Allowed, Reason: "allowed: in a network namespace the tests made, where nothing leads out"},
		{Schema: 1, RunID: "r9", Package: "p", Test: "TestLive", Marked: true,
			Syscall: "connect", Dest: "192.0.2.1:80", Class: "external", Decision: audit.Allowed, Reason: "allowed: marked test"},
	}
	s := Build(recs, "r9")
	if s.Totals.Allowed != 2 || s.Totals.OwnNetns != 1 {
		t.Errorf("totals %+v, want 2 allowed, 1 in own namespaces", s.Totals)
	}
	want := "(1 allowed by marker or --allow, 1 allowed in network namespaces the tests made)"
	if h := s.Headline(); !strings.Contains(h, want) {
		t.Errorf("headline %q lacks %q", h, want)
	}
}

// TestToolchainCounted: the go command's own calls are counted apart in
// the headline, never as allowed "by marker or --allow".
func TestToolchainCounted(t *testing.T) {
	recs := []audit.Record{
		{Schema: 1, RunID: "r9", Syscall: "connect", Dest: "192.0.2.1:443", Class: "external", Decision: audit.Allowed,
			Reason: policy.ReasonToolchain, Argv0: "go"},
		{Schema: 1, RunID: "r9", Syscall: "connect", Dest: "192.0.2.2:443", Class: "external", Decision: audit.Allowed,
			Reason: policy.ReasonToolchain, Argv0: "go"},
	}
	s := Build(recs, "r9")
	if s.Totals.Allowed != 2 || s.Totals.Toolchain != 2 {
		t.Errorf("totals %+v, want 2 allowed, 2 of them the go command's", s.Totals)
	}
	h := s.Headline()
	if want := "(2 the go command's own)"; !strings.Contains(h, want) || strings.Contains(h, "marker") {
		t.Errorf("headline %q: want %q and no word of markers", h, want)
	}
}

func TestReadRejectsTornLine(t *testing.T) {
	good, _ := json.Marshal(audit.Record{Schema: 1, Time: time.Unix(0, 0).UTC(), Syscall: "connect", Decision: audit.Denied})
	in := string(good) + "\n" + `{"schema":1,"syscall":"conn` + "\n"
	recs, err := Read(strings.NewReader(in), "log")
	if err == nil || !strings.Contains(err.Error(), "log:2:") {
		t.Fatalf("Read of a torn log = %v, want an error naming line 2", err)
	}
	if len(recs) != 1 {
		t.Errorf("got %d records before the torn line, want 1", len(recs))
	}
}

func TestReadRejectsOtherSchema(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"schema":2,"syscall":"connect","decision":"denied"}`+"\n"), "log"); err == nil {
		t.Fatal("a record of an unknown schema was accepted")
	}
}

func TestMarkdownMaxRows(t *testing.T) {
	var recs []audit.Record
	for _, name := range []string{"TestA", "TestB", "TestC"} {
		recs = append(recs, audit.Record{Schema: 1, Package: "p", Test: name, Syscall: "connect", Dest: "192.0.2.1:80", Class: "external", Decision: audit.Denied})
	}
	var b bytes.Buffer
	if err := Build(recs, "").Markdown(&b, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "`TestA`") || strings.Contains(b.String(), "`TestB`") || !strings.Contains(b.String(), "2 more rows not shown") {
		t.Errorf("Markdown with 1 row per table:\n%s", b.String())
	}
}

func TestMarkdownEscapesCells(t *testing.T) {
	recs := []audit.Record{{Schema: 1, Package: "p", Test: "TestX/a|b`c", Syscall: "connect", Dest: "192.0.2.1:80", Class: "external", Decision: audit.Denied}}
	var b bytes.Buffer
	if err := Build(recs, "").Markdown(&b, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "`TestX/a\\|b'c`") {
		t.Errorf("cell not escaped:\n%s", b.String())
	}
}

// TestHeadlineCountsBlockedPackages: the headline's package count is of
// packages with blocked attempts, as its sentence says; a package with
// only marker findings or nettrap errors is counted among the findings
// but not there.
func TestHeadlineCountsBlockedPackages(t *testing.T) {
	recs := []audit.Record{
		{Schema: 1, RunID: "r9", Package: "p/leaky", Test: "TestFetch", Syscall: "connect", SockType: "tcp",
			Dest: "192.0.2.1:80", Class: "external", Decision: audit.Denied},
		{Schema: 1, RunID: "r9", Package: "p/odd", Test: "TestOdd", Decision: audit.BadMarker, MarkerValue: "yes"},
		{Schema: 1, RunID: "r9", Package: "p/old", Test: "TestOld", Marked: true, Decision: audit.StaleMarker},
		{Schema: 1, RunID: "r9", Package: "p/init", Test: audit.Collection, Syscall: "connect", SockType: "tcp",
			Dest: "192.0.2.2:80", Class: "external", Decision: audit.Denied},
	}
	s := Build(recs, "r9")
	if s.Totals.BlockedPackages != 2 || s.Totals.Packages != 4 {
		t.Errorf("totals %+v, want 2 packages with blocked attempts of 4 with findings", s.Totals)
	}
	want := "nettrap: 2 outbound network attempts blocked in 2 packages"
	if h := s.Headline(); !strings.HasPrefix(h, want) {
		t.Errorf("headline %q, want it to start %q", h, want)
	}
	s = Build(recs[:2], "r9")
	want = "nettrap: 1 outbound network attempt blocked in 1 package"
	if h := s.Headline(); !strings.HasPrefix(h, want) {
		t.Errorf("headline %q, want it to start %q", h, want)
	}
}

// TestLeftCallNotCounted: a record of a call its caller left (the kernel
// made it again: the next record) makes no row; the log keeps it.
func TestLeftCallNotCounted(t *testing.T) {
	rec := audit.Record{Decision: audit.Denied, Package: "example.com/p", Test: "TestA", Dest: "203.0.113.7:80", Class: "external", Syscall: "connect", SockType: "tcp"}
	left := rec
	left.Left = true
	s := Build([]audit.Record{left, rec}, "")
	if len(s.Blocked) != 1 || s.Blocked[0].Count != 1 || s.Totals.Blocked != 1 {
		t.Errorf("rows %+v, totals %+v: want the one judged call", s.Blocked, s.Totals)
	}
}
