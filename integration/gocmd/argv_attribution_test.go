package gocmd

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// TestArgvAttribution: a denial is put under the test that made it
// whatever -test.v the user gives. After -dial=true every word parses one
// way only, so nettrap knows the user's -test.v is in effect and gives it
// the value test2json: the framed stream names the tests, -test.v=false
// included, and is rendered in the mode asked for. After a bare -dial
// (a flag of the package, whose arity nettrap cannot know) the user's
// -test.v is left alone: with -test.v=true the binary prints its tests
// without the marker, and nettrap reads them so; -test.v=false names
// none: the denial fails the package, and --allow-test has no test to
// match (the documented limit).
func TestArgvAttribution(t *testing.T) {
	sandbox.Require(t)
	bin := filepath.Join(buildFixtures(t, "argv"), "argv.test")
	dialLine := map[string][]*regexp.Regexp{"TestDial": {ext("connect tcp", 1201, "TestDial")}}
	pkgLine := map[string][]*regexp.Regexp{"": {ext("connect tcp", 1201, atCollection)}}
	denied := expectation{results: res("TestPass", "PASS", "TestDial", "FAIL"), lines: dialLine, final: "FAIL", code: 1}
	allowed := expectation{results: res("TestPass", "PASS", "TestDial", "PASS"), lines: map[string][]*regexp.Regexp{}, final: "PASS"}
	for _, tc := range []struct {
		name  string
		flags []string // nettrap's
		args  []string // the binary's, after -dial
		mode  outputMode
		want  expectation
	}{
		{"quiet", nil, nil, outputModes[2], denied},
		{"verbose", nil, []string{"-test.v"}, outputModes[1], denied},
		{"verbose-certain", nil, []string{"-test.v"}, outputModes[1], denied},
		{"not-verbose-certain", nil, []string{"-test.v=false"}, outputModes[2], denied},
		{"not-verbose-allow-certain", []string{"--allow-test", "TestDial"}, []string{"-test.v=false"}, outputModes[2], allowed},
		{"verbose-late", nil, []string{"-test.run", "TestPass|TestDial", "-test.v=true"}, outputModes[1], denied},
		{"json", nil, []string{"-test.v=test2json"}, outputModes[0], denied},
		{"verbose-then-json", nil, []string{"-test.v", "-test.v=test2json"}, outputModes[0], denied},
		{"flag-value", nil, []string{"-name", "-test.v"}, outputModes[2], denied},
		{"allowed-verbose", []string{"--allow-test", "TestDial"}, []string{"-test.v"}, outputModes[1], allowed},
		{"not-verbose", nil, []string{"-test.v=false"}, outputModes[2],
			expectation{results: res(), lines: pkgLine, final: "FAIL", code: 1}},
		{"not-verbose-allow", []string{"--allow-test", "TestDial"}, []string{"-test.v=false"}, outputModes[2],
			expectation{results: res(), lines: pkgLine, final: "FAIL", code: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial := "-dial"
			if strings.HasSuffix(tc.name, "-certain") {
				dial = "-dial=true"
			}
			args := slices.Concat([]string{dial, "-test.run=^(TestPass|TestDial)$"}, tc.args)
			run := runConfined(t, bin, "argv", tc.flags, args)
			checkRun(t, run, tc.want)
			got := outcomeOf(t, tc.mode, run.Stdout, fixtureModule+"/argv")
			if errs := diffOutcome(got, tc.want, tc.mode.name == "quiet"); len(errs) > 0 {
				t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
			}
		})
	}
}
