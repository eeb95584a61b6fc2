package run

import (
	"slices"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
)

// unusedRules are the findings about --allow-test rules that named no
// test with a network attempt in run runID: a rule is used when an
// attempt's record lists it (gotest.Tracker puts there every rule that
// names the test, whether or not a marker did too). Only a nettrap that
// sees the whole run can tell (finishRun): under `go test -exec nettrap`
// each nettrap sees one package, where a rule for another package is
// rightly unused.
func unusedRules(rules []gotest.TestRule, recs []audit.Record, runID string, now time.Time) []audit.Record {
	used := map[string]bool{}
	for _, r := range recs {
		if r.RunID == runID {
			for _, raw := range r.AllowTest {
				used[raw] = true
			}
		}
	}
	var out []audit.Record
	var seen []string
	for _, rule := range rules {
		if used[rule.Raw] || slices.Contains(seen, rule.Raw) {
			continue
		}
		seen = append(seen, rule.Raw)
		out = append(out, audit.Record{Schema: audit.SchemaVersion, Time: now, RunID: runID,
			AllowTest: []string{rule.Raw}, Decision: audit.UnusedRule, Reason: audit.ReasonUnusedRule})
	}
	return out
}

// addUnusedRules appends the run's unused-rule findings to its audit log
// and to recs, so that `nettrap report` on the log later says the same.
func addUnusedRules(o Options, path string, recs []audit.Record) ([]audit.Record, error) {
	found := unusedRules(o.AllowTests, recs, o.RunID, time.Now())
	if len(found) == 0 {
		return recs, nil
	}
	w, err := audit.Open(path)
	if err != nil {
		return recs, err
	}
	for _, r := range found {
		if err := w.Write(r); err != nil {
			w.Close()
			return recs, err
		}
	}
	return append(recs, found...), w.Close()
}
