package gocmd

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// updateBinarySummary rewrites testdata/binary-summary.golden from a run
// (go test -run TestBinarySummary -update-binary-summary ./integration/gocmd/).
var updateBinarySummary = flag.Bool("update-binary-summary", false, "rewrite testdata/binary-summary.golden")

// TestBinarySummary: `nettrap -- ./where.test -test.v`, a test binary
// built with go test -c and run directly, leaves the trace every other
// way of running leaves: its records in a kept audit log
// ($TMPDIR/nettrap-run-*/audit.jsonl, or the one --audit-log names), and
// the run's summary on stderr naming that log, once, after the test
// output; run id and log path aside it is testdata/binary-summary.golden.
// A run with no record (clean) prints nothing of nettrap's and leaves no
// log. Nothing arrives at the fake hosts.
func TestBinarySummary(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "where", "clean")
	eps := whereEndpoints()
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	tmp := t.TempDir()
	dir := filepath.Join(fixtureRoot(t), "where")
	run := harness.RunIn(t, dir, harness.GoEnv("TMPDIR="+tmp), harness.Nettrap(t), filepath.Join(bins, "where.test"), "-test.v")
	if run.Code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", run.Code, run.Stdout, run.Stderr)
	}
	checkArrivals(t, h, mark, eps, nil)
	logs, _ := filepath.Glob(filepath.Join(tmp, "nettrap-run-*", "audit.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("logs %q, want the run's one", logs)
	}
	sums := summaryBlocks(run.Stderr)
	if len(sums) != 1 || withoutSummary(t, run.Stderr) != "" {
		t.Fatalf("stderr: want the run's summary once and nothing else:\n%s", run.Stderr)
	}
	m := regexp.MustCompile(`\(run ([0-9a-f]+); audit log (\S+)\)`).FindStringSubmatch(sums[0])
	if m == nil || m[2] != logs[0] {
		t.Fatalf("the summary does not name the run and the log %s:\n%s", logs[0], sums[0])
	}
	denied := 0
	for _, r := range harness.ReadAudit(t, logs[0]) {
		if r.RunID != m[1] {
			t.Errorf("a record of run %q in the log, want the summary's run %s", r.RunID, m[1])
		}
		if r.Decision == "denied" {
			denied++
		}
	}
	if denied != 8 {
		t.Errorf("the log has %d denied records, want where's 8", denied)
	}
	got := strings.ReplaceAll(strings.ReplaceAll(sums[0], m[1], "RUN"), m[2], "LOG")
	golden := filepath.Join(fixtureRoot(t), "binary-summary.golden")
	matchGolden(t, golden, got, *updateBinarySummary, "update-binary-summary", "the summary's lines", "")
	if !strings.Contains(run.Stdout, "--- FAIL: TestDirect ") {
		t.Errorf("the test output lacks TestDirect's failure:\n%s", run.Stdout)
	}

	t.Run("audit-log", func(t *testing.T) {
		tmp := t.TempDir()
		log := filepath.Join(t.TempDir(), "mine.jsonl")
		run := harness.RunIn(t, dir, harness.GoEnv("TMPDIR="+tmp), harness.Nettrap(t), "--audit-log", log, filepath.Join(bins, "where.test"))
		sums := summaryBlocks(run.Stderr)
		if run.Code != 1 || len(sums) != 1 || !strings.Contains(sums[0], "; audit log "+log+")") {
			t.Errorf("exit %d, want 1 and a summary naming %s:\n%s", run.Code, log, run.Stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "nettrap-run-*")); len(left) != 0 {
			t.Errorf("a run with its log named left %q", left)
		}
	})
	t.Run("clean", func(t *testing.T) {
		tmp := t.TempDir()
		run := harness.RunIn(t, filepath.Join(fixtureRoot(t), "clean"), harness.GoEnv("TMPDIR="+tmp), harness.Nettrap(t), filepath.Join(bins, "clean.test"), "-test.v")
		left, _ := filepath.Glob(filepath.Join(tmp, "nettrap-run-*"))
		if run.Code != 0 || run.Stderr != "" || len(left) != 0 {
			t.Errorf("a run with no record: exit %d, directories left %q, stderr:\n%s", run.Code, left, run.Stderr)
		}
	})
}

// withoutSummary is the stderr of a test binary run directly without the
// run's summary (at most one, naming an audit log that is there): a
// block from its headline to its totals, or the headline alone where
// nothing was blocked (1 allowed by marker or --allow).
func withoutSummary(t *testing.T, stderr string) string {
	t.Helper()
	sums := summaryBlocks(stderr)
	for _, s := range sums {
		stderr = strings.Replace(stderr, s, "", 1)
	}
	headline := regexp.MustCompile(`(?m)^nettrap: .*\(run [0-9a-f]+; audit log \S+\)\n`)
	for _, h := range headline.FindAllString(stderr, -1) {
		sums = append(sums, h)
		stderr = strings.Replace(stderr, h, "", 1)
	}
	if len(sums) > 1 {
		t.Errorf("%d run summaries, want one at most:\n%s", len(sums), strings.Join(sums, ""))
	}
	for _, s := range sums {
		m := regexp.MustCompile(`; audit log (\S+)\)`).FindStringSubmatch(s)
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("the summary names a log that is not there: %v", err)
		}
	}
	return stderr
}
