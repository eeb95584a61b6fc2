package run

import (
	"slices"
	"testing"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
)

func TestUnusedRules(t *testing.T) {
	rules := []gotest.TestRule{
		gotest.MustParseTestRule("^TestSetup$"),
		gotest.MustParseTestRule("a.TestLive"),
		gotest.MustParseTestRule("b.TestLive"),
		gotest.MustParseTestRule("^TestSetup$"), // twice: one finding
	}
	recs := []audit.Record{
		{RunID: "r1", Package: "example.com/a", Test: "TestLive", Decision: audit.Allowed, AllowTest: []string{"a.TestLive"}},
		{RunID: "r0", Package: "example.com/b", Test: "TestLive", Decision: audit.Allowed, AllowTest: []string{"b.TestLive"}}, // an older run
		{RunID: "r1", Package: "example.com/c", Test: "TestSetup", Decision: audit.StaleMarker},
	}
	now := time.Unix(1, 0)
	got := unusedRules(rules, recs, "r1", now)
	var names []string
	for _, r := range got {
		if r.Decision != audit.UnusedRule || r.RunID != "r1" || r.Reason != audit.ReasonUnusedRule || !r.Time.Equal(now) || len(r.AllowTest) != 1 {
			t.Errorf("finding %+v", r)
			continue
		}
		names = append(names, r.AllowTest[0])
	}
	if want := []string{"^TestSetup$", "b.TestLive"}; !slices.Equal(names, want) {
		t.Errorf("unused rules %q, want %q", names, want)
	}
	if got := unusedRules(nil, recs, "r1", now); len(got) != 0 {
		t.Errorf("no rules, findings %+v", got)
	}
}
