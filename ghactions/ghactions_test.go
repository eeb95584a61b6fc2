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

// A lookup the sinkhole read is annotated with the name, like the line.
func TestAnnotateLookup(t *testing.T) {
	recs := []audit.Record{{Schema: 1, Package: "example.com/m/dial", Test: "TestDial", Syscall: "connect", SockType: "udp",
		Dest: "192.0.2.53:53", Class: "dns", Lookup: "TXT _grpc_config.localhost", Decision: audit.Denied}}
	var b bytes.Buffer
	if err := Annotate(&b, report.Build(recs, "")); err != nil {
		t.Fatal(err)
	}
	want := "::DNS lookup blocked: TXT _grpc_config.localhost via 192.0.2.53:53 during TestDial of package example.com/m/dial"
	if !strings.Contains(b.String(), want) {
		t.Errorf("annotation lacks %q:\n%s", want, b.String())
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

func TestAnnotateBadMarkerAndHint(t *testing.T) {
	recs := []audit.Record{
		{Schema: 1, Package: "example.com/m/p", Test: "TestOdd", Decision: audit.BadMarker, MarkerValue: "yes",
			Reason: `unknown value "yes" of the "nettrap" attribute; the marker is t.Attr("nettrap", "network")`},
		{Schema: 1, Package: "example.com/m/p", Test: "TestB", AfterTest: "TestA", AfterMS: 1.5,
			Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied},
	}
	var b bytes.Buffer
	if err := Annotate(&b, report.Build(recs, "")); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"::error title=nettrap%3A example.com/m/p TestOdd::TestOdd of package example.com/m/p fails: unknown value \"yes\" of the \"nettrap\" attribute",
		"during TestB of package example.com/m/p. hint: TestB made network attempts only right after TestA ended (1.5ms before the first)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("annotations lack %q:\n%s", want, got)
		}
	}
}
