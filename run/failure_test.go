package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/report"
)

// An inner nettrap's failure lands in the outer run's log, under the
// test binary's package; not when the log is relative, there is no run,
// or the command is no test binary.
func TestNoteFailure(t *testing.T) {
	self, err := os.Executable() // a test binary of package run
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		log, runID string
		argv       []string
	}{
		{"rel.jsonl", "r1", []string{self}},
		{filepath.Join(dir, "norun.jsonl"), "", []string{self}},
		{filepath.Join(dir, "notest.jsonl"), "r1", []string{"sh"}},
	} {
		NoteFailure(tc.log, tc.runID, tc.argv, "cannot confine")
		if _, err := os.Stat(tc.log); err == nil {
			t.Errorf("NoteFailure(%q, %q, %q) wrote a log", tc.log, tc.runID, tc.argv)
		}
	}
	log := filepath.Join(dir, "audit.jsonl")
	NoteFailure(log, "r1", []string{self, "-test.v"}, "cannot confine")
	recs, err := report.ReadFiles(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Decision != audit.NettrapError || recs[0].RunID != "r1" ||
		recs[0].Package != "github.com/nettrap/nettrap/run" || recs[0].Reason != "cannot confine" {
		t.Errorf("records %+v, want one error of package run", recs)
	}
}
