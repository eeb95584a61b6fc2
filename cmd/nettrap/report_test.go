package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/run"
)

// writeLog writes recs as an audit log and returns its path.
func writeLog(t *testing.T, recs ...audit.Record) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func reportRecord(d audit.Decision, test string) audit.Record {
	return audit.Record{Schema: audit.SchemaVersion, RunID: "r1", Package: "example.com/m/p", Test: test,
		Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: d}
}

// status is the exit status runReport's error stands for.
func status(err error) int {
	var e *run.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return e.Code
	}
	return -1
}

// TestReportStatus: nettrap report exits 1 when its logs hold what fails
// a run (a blocked attempt, in a test or at collection time, a bad
// marker), 0 for what fails nothing (would-be blocks, allowed calls,
// stale markers), and 0 with --exit-zero whatever they hold.
func TestReportStatus(t *testing.T) {
	blocked := writeLog(t, reportRecord(audit.Denied, "TestLeak"))
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"blocked", []string{blocked}, 1},
		{"blocked, --exit-zero", []string{"--exit-zero", blocked}, 0},
		{"collection", []string{writeLog(t, reportRecord(audit.Denied, audit.Collection))}, 1},
		{"bad marker", []string{writeLog(t, audit.Record{Schema: 1, RunID: "r1", Package: "example.com/m/p", Test: "TestOdd",
			Decision: audit.BadMarker, MarkerValue: "yes"})}, 1},
		{"audit mode", []string{writeLog(t, reportRecord(audit.WouldDeny, "TestLeak"))}, 0},
		{"allowed and stale", []string{writeLog(t, reportRecord(audit.Allowed, "TestLive"),
			audit.Record{Schema: 1, RunID: "r1", Package: "example.com/m/p", Test: "TestStale", Decision: audit.StaleMarker})}, 0},
		{"empty", []string{writeLog(t)}, 0},
		{"another run's blocked attempt", []string{"--run-id", "r2", blocked}, 0},
	} {
		var stdout, stderr bytes.Buffer
		err := reportTo(c.args, &stdout, &stderr, func(string) string { return "" })
		if got := status(err); got != c.want || stdout.Len() == 0 || stderr.Len() != 0 {
			t.Errorf("%s: exit %d (%v), want %d; stdout:\n%s\nstderr:\n%s", c.name, got, err, c.want, stdout.String(), stderr.String())
		}
	}
}

// TestReportGitHub: on GitHub Actions (--github=auto) the report writes
// the annotations on stderr and appends the step summary; --github=off
// writes neither; --github=on writes them anywhere; a bad value is a
// usage error.
func TestReportGitHub(t *testing.T) {
	log := writeLog(t, reportRecord(audit.Denied, "TestLeak"))
	annotation := "::error title=nettrap%3A example.com/m/p TestLeak::Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak of package example.com/m/p\n"
	for _, c := range []struct {
		name         string
		github       string
		actions      bool
		wantGitHub   bool
		stepSummary  bool
		wantStatus   int
		wantInStderr string
	}{
		{"auto on GitHub Actions", "auto", true, true, true, 1, annotation},
		{"auto elsewhere", "auto", false, false, true, 1, ""},
		{"off on GitHub Actions", "off", true, false, true, 1, ""},
		{"on elsewhere, no step summary file", "on", false, true, false, 1, annotation},
		{"bogus", "bogus", true, false, true, 125, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			summary := filepath.Join(t.TempDir(), "summary.md")
			if err := os.WriteFile(summary, []byte("# earlier step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			if c.actions {
				env["GITHUB_ACTIONS"] = "true"
			}
			if c.stepSummary {
				env["GITHUB_STEP_SUMMARY"] = summary
			}
			var stdout, stderr bytes.Buffer
			err := reportTo([]string{"--github=" + c.github, log}, &stdout, &stderr, func(k string) string { return env[k] })
			if got := status(err); got != c.wantStatus {
				t.Errorf("exit %d (%v), want %d", got, err, c.wantStatus)
			}
			if stderr.String() != c.wantInStderr {
				t.Errorf("stderr %q, want %q", stderr.String(), c.wantInStderr)
			}
			md, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			appended := strings.HasPrefix(string(md), "# earlier step\n### nettrap\n") && strings.Contains(string(md), "`TestLeak`")
			if appended != (c.wantGitHub && c.stepSummary) {
				t.Errorf("step summary appended: %v, want %v:\n%s", appended, c.wantGitHub && c.stepSummary, md)
			}
		})
	}
}
