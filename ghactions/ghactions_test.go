package ghactions

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/report"
)

func denials(n int) []audit.Record {
	var recs []audit.Record
	for i := range n {
		recs = append(recs, audit.Record{Schema: 1, RunID: "r", Package: "example.com/m/leaky", Test: fmt.Sprintf("TestLeak%03d", i),
			Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied})
	}
	return recs
}

func TestAnnotateAtMostTen(t *testing.T) {
	var b bytes.Buffer
	if err := Annotate(&b, report.Build(denials(13), "")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != MaxAnnotations+1 {
		t.Fatalf("got %d lines, want %d annotations and one line:\n%s", len(lines), MaxAnnotations, b.String())
	}
	for _, l := range lines[:MaxAnnotations] {
		if !strings.HasPrefix(l, "::error title=nettrap%3A example.com/m/leaky TestLeak") ||
			!strings.Contains(l, "::Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
			t.Errorf("bad annotation %q", l)
		}
	}
	if last := lines[MaxAnnotations]; strings.HasPrefix(last, "::") || !strings.Contains(last, "3 more blocked attempts") {
		t.Errorf("last line %q, want a plain line saying 3 more", last)
	}
}

func TestAnnotateFewAndCollection(t *testing.T) {
	recs := denials(1)
	recs = append(recs, audit.Record{Schema: 1, Package: "example.com/m/mainleak", Test: audit.Collection,
		Syscall: "connect", SockType: "tcp", Dest: "192.0.2.1:80", Class: "external", Decision: audit.Denied})
	recs = append(recs, recs[0]) // a second attempt of the same test: one row, counted
	var b bytes.Buffer
	if err := Annotate(&b, report.Build(recs, "")); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if strings.Count(got, "::error ") != 2 || strings.Contains(got, "more blocked") {
		t.Errorf("want 2 annotations and no 'more' line:\n%s", got)
	}
	if !strings.Contains(got, "at collection time") || !strings.Contains(got, ", 2 times") {
		t.Errorf("want the collection attempt and the count:\n%s", got)
	}
}

// A lookup the sinkhole read is annotated with the name, like the line;
// its queries (A and AAAA at two nameservers) are one annotation, which
// counts them.
func TestAnnotateLookup(t *testing.T) {
	q := audit.Record{Schema: 1, Package: "example.com/m/dial", Test: "TestDial", Syscall: "connect", SockType: "udp",
		Dest: "192.0.2.53:53", Class: "dns", Lookup: "TXT _grpc_config.localhost", Decision: audit.Denied}
	var b bytes.Buffer
	if err := Annotate(&b, report.Build([]audit.Record{q}, "")); err != nil {
		t.Fatal(err)
	}
	want := "::DNS lookup blocked: _grpc_config.localhost during TestDial of package example.com/m/dial\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("annotation lacks %q:\n%s", want, b.String())
	}
	var recs []audit.Record
	for _, ns := range []string{"192.0.2.53:53", "192.0.2.54:53"} {
		for _, typ := range []string{"A", "AAAA"} {
			r := q
			r.Dest, r.Lookup = ns, typ+" example.com"
			recs = append(recs, r)
		}
	}
	b.Reset()
	if err := Annotate(&b, report.Build(recs, "")); err != nil {
		t.Fatal(err)
	}
	want = "::DNS lookup blocked: example.com during TestDial of package example.com/m/dial (4 queries via 192.0.2.53:53, 192.0.2.54:53)\n"
	if n := strings.Count(b.String(), "::error "); n != 1 || !strings.Contains(b.String(), want) {
		t.Errorf("%d annotations, want one: %q:\n%s", n, want, b.String())
	}
}

func TestAnnotateNothing(t *testing.T) {
	var b bytes.Buffer
	if err := Annotate(&b, report.Build(nil, "")); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 0 {
		t.Errorf("clean run annotated: %q", b.String())
	}
}

func TestEscape(t *testing.T) {
	if got, want := escapeData("50%\nx\r"), "50%25%0Ax%0D"; got != want {
		t.Errorf("escapeData = %q, want %q", got, want)
	}
	if got, want := escapeProperty("a:b,c%"), "a%3Ab%2Cc%25"; got != want {
		t.Errorf("escapeProperty = %q, want %q", got, want)
	}
}

func TestStepSummaryAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(path, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendStepSummary(path, report.Build(denials(2), "")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "# earlier step\n### nettrap\n") || !strings.Contains(string(b), "`TestLeak001`") {
		t.Errorf("step summary:\n%s", b)
	}
}

func TestStepSummaryStaysUnderLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), MaxStepSummary/2), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each row is well over 100 bytes: 10000 of them do not fit.
	if err := AppendStepSummary(path, report.Build(denials(10000), "")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= MaxStepSummary {
		t.Errorf("step summary is %d bytes, limit %d", st.Size(), MaxStepSummary)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "more rows not shown") {
		t.Error("cut summary does not say rows were left out")
	}
}

func TestStepSummaryFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), MaxStepSummary-10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendStepSummary(path, report.Build(denials(1), "")); err == nil {
		t.Fatal("no error when the step summary has no room")
	}
	if st, _ := os.Stat(path); st.Size() != MaxStepSummary-10 {
		t.Errorf("full step summary changed to %d bytes", st.Size())
	}
}

func TestEnabled(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true"}
	if !Enabled(func(k string) string { return env[k] }) || Enabled(func(string) string { return "" }) {
		t.Error("Enabled does not follow GITHUB_ACTIONS=true")
	}
}

func TestAnnotateBadMarkerNoHint(t *testing.T) {
	// A record of an older nettrap, with its timing guess: no hint.
	old, err := report.Read(strings.NewReader(`{"schema":1,"package":"example.com/m/p","test":"TestB","after_test":"TestA","after_ms":1.5,`+
		`"syscall":"connect","sock_type":"tcp","dest":"203.0.113.7:443","class":"external","decision":"denied"}`+"\n"), "old.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	recs := append([]audit.Record{
		{Schema: 1, Package: "example.com/m/p", Test: "TestOdd", Decision: audit.BadMarker, MarkerValue: "yes",
			Reason: `unknown value "yes" of the "nettrap" attribute; the marker is t.Attr("nettrap", "network")`}}, old...)
	var b bytes.Buffer
	if err := annotate(&b, report.Build(recs, ""), "/ws"); err != nil {
		t.Fatal(err)
	}
	want := "::error title=nettrap%3A example.com/m/p TestB::Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestB of package example.com/m/p\n" +
		"::error title=nettrap%3A example.com/m/p TestOdd::TestOdd of package example.com/m/p fails: unknown value \"yes\" of the \"nettrap\" attribute; the marker is t.Attr(\"nettrap\", \"network\")\n"
	if got := b.String(); got != want {
		t.Errorf("annotations\n%s\nwant\n%s", got, want)
	}
}

// TestAnnotateWhere: a row whose stack was read gets file= and line=,
// relative to the workspace, and its text says where and whose goroutine.
func TestAnnotateWhere(t *testing.T) {
	rec := func(test, path string, o audit.Origin) audit.Record {
		r := audit.Record{Schema: 1, Package: "example.com/shop/prices", Test: test, Syscall: "connect", SockType: "tcp",
			Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied, Origin: o}
		r.Stack = []audit.Frame{{Func: "net.(*Dialer).DialContext", File: "/go/src/net/dial.go", Line: 587}, {Func: o.Where.Func, File: path, Line: o.Where.Line}}
		return r
	}
	fetch := audit.Origin{Where: &audit.Frame{Func: "example.com/shop/prices.fetchQuote", File: "prices/client.go", Line: 31}}
	leak := audit.Origin{Where: &audit.Frame{Func: "example.com/shop/prices.TestLeak.func1", File: "prices/leak_test.go", Line: 12},
		StartedBy: "TestLeak", StartedByEnded: true}
	unowned := audit.Origin{Where: leak.Where, Unowned: true}
	tests := []struct {
		name, root string
		rec        audit.Record
		want       string
	}{
		{"module at the workspace root", "/ws", rec("TestFetch", "/ws/prices/client.go", fetch),
			"::error file=prices/client.go,line=31,title=nettrap%3A example.com/shop/prices TestFetch::Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestFetch at prices/client.go:31 (prices.fetchQuote) of package example.com/shop/prices\n"},
		{"module in a subdirectory", "/ws", rec("TestFetch", "/ws/svc/prices/client.go", fetch),
			"::error file=svc/prices/client.go,line=31,"},
		{"built elsewhere: relative to the module", "/ws", rec("TestFetch", "/build/prices/client.go", fetch),
			"::error file=prices/client.go,line=31,"},
		{"-trimpath", "/ws", rec("TestFetch", "example.com/shop/prices/client.go", fetch),
			"::error file=prices/client.go,line=31,"},
		{"goroutine no running test is known to have started", "/ws", rec("TestOK", "/ws/prices/leak_test.go", unowned),
			"::error file=prices/leak_test.go,line=12,title=nettrap%3A example.com/shop/prices (package%2C during TestOK)::Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestOK, in a goroutine no running test is known to have started at prices/leak_test.go:12 (prices.TestLeak.func1) of package example.com/shop/prices\n"},
		{"goroutine of an ended test", "/ws", rec("TestOK", "/ws/prices/leak_test.go", leak),
			"::error file=prices/leak_test.go,line=12,title=nettrap%3A example.com/shop/prices TestLeak (its goroutine%2C during TestOK)::Outbound network blocked: connect tcp 203.0.113.7:443 (external) from a goroutine of TestLeak, during TestOK at prices/leak_test.go:12 (prices.TestLeak.func1) of package example.com/shop/prices\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := annotate(&b, report.Build([]audit.Record{tt.rec}, ""), tt.root); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tt.want) {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, b.String(), tt.want)
		}
	}
}

// TestAnnotateHelper: an attempt made in a helper is annotated on the
// test's own line that called it (one annotation, which names the
// helper's line); where the test's line cannot be placed in the
// workspace, on the helper's. Two tests calling one helper get two
// lines, not one line twice.
func TestAnnotateHelper(t *testing.T) {
	helper := audit.Frame{Func: "example.com/shop/prices.fetchQuote", File: "prices/client.go", Line: 31}
	rec := func(test string, line int, testPath string) audit.Record {
		caller := audit.Frame{Func: "example.com/shop/prices." + test, File: "prices/prices_test.go", Line: line}
		return audit.Record{Schema: 1, Package: "example.com/shop/prices", Test: test, Syscall: "connect", SockType: "tcp",
			Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied,
			Origin: audit.Origin{Where: &helper, CalledFrom: &caller, Stack: []audit.Frame{
				{Func: helper.Func, File: "/ws/prices/client.go", Line: 31},
				{Func: caller.Func, File: testPath, Line: line},
			}}}
	}
	var b bytes.Buffer
	recs := []audit.Record{rec("TestFetch", 48, "/ws/prices/prices_test.go"), rec("TestQuote", 60, "/ws/prices/prices_test.go")}
	if err := annotate(&b, report.Build(recs, ""), "/ws"); err != nil {
		t.Fatal(err)
	}
	want := "::error file=prices/prices_test.go,line=48,title=nettrap%3A example.com/shop/prices TestFetch::" +
		"Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestFetch at prices/client.go:31 (prices.fetchQuote, called from this line) of package example.com/shop/prices\n" +
		"::error file=prices/prices_test.go,line=60,title=nettrap%3A example.com/shop/prices TestQuote::" +
		"Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestQuote at prices/client.go:31 (prices.fetchQuote, called from this line) of package example.com/shop/prices\n"
	if b.String() != want {
		t.Errorf("annotations\n%s\nwant\n%s", b.String(), want)
	}

	// The test's file is outside the workspace (and its frame has no
	// relative file either): the helper's line, as before.
	r := rec("TestFetch", 48, "/elsewhere/prices_test.go")
	r.CalledFrom = &audit.Frame{Func: r.CalledFrom.Func, File: "/elsewhere/prices_test.go", Line: 48}
	b.Reset()
	if err := annotate(&b, report.Build([]audit.Record{r}, ""), "/ws"); err != nil {
		t.Fatal(err)
	}
	want = "::error file=prices/client.go,line=31,title=nettrap%3A example.com/shop/prices TestFetch::" +
		"Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestFetch at prices/client.go:31 (prices.fetchQuote) of package example.com/shop/prices\n"
	if b.String() != want {
		t.Errorf("annotation\n%s\nwant\n%s", b.String(), want)
	}
}
