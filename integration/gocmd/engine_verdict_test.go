package gocmd

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// verdict is what a fixture run decided: nettrap's exit status, each
// test's result, the nettrap lines under each test, the final line.
type verdict struct {
	code    int
	results map[string]string
	lines   map[string][]string
	final   string
}

func (v verdict) String() string {
	return fmt.Sprintf("exit %d, final %q, results %v, lines %q", v.code, v.final, v.results, v.lines)
}

// TestEngineVerdictsEqual runs every attribution fixture as go test -json
// runs it (-test.v=test2json) under the notify engine, the ptrace engine
// asked for, and the ptrace engine under a listener above (trapping bind
// and listen, then the calls nettrap decides), and the kernel engine
// where it can run: every engine must reach the same verdicts, and let
// only the marked tests' connections through.
func TestEngineVerdictsEqual(t *testing.T) {
	lab.OwnListener(t) // the notify engine and parentlisten
	sandbox.Require(t)
	b := lab.Programs(t)
	var pkgs []string
	for _, sc := range attributionScenarios {
		pkgs = append(pkgs, sc.pkg)
	}
	slices.Sort(pkgs)
	bins := buildFixtures(t, slices.Compact(pkgs)...)
	engines := []struct {
		name string
		argv []string
	}{
		{"notify", []string{b.Plain, "--engine=notify"}},
		{"ptrace", []string{b.Plain, "--engine=ptrace"}},
		{"parent", lab.UnderParent(b, "bind,listen", "", b.Plain)},
		{"parent-connect", lab.UnderParent(b, "connect,sendto,sendmsg", "", b.Plain)},
	}
	// The kernel engine where this kernel and user have it: root, and
	// cgroup programs that can hold a call (after 6.12).
	if err := lab.KernelEngine(); err == nil {
		engines = append(engines, struct {
			name string
			argv []string
		}{"kernel", []string{b.Plain, "--engine=kernel"}})
	} else {
		t.Logf("no kernel engine here: %v", err)
	}
	eps := fixtureEndpoints()
	h := fakehost.Start(t, eps...)
	for _, sc := range attributionScenarios {
		t.Run(sc.name, func(t *testing.T) {
			pkg := fixtureModule + "/" + sc.pkg
			var first verdict
			for i, e := range engines {
				if e.name == "kernel" && slices.Contains(sc.flags, "--sealed") {
					continue // --sealed is the notify engine's
				}
				mark := h.Mark()
				argv := slices.Concat(e.argv, sc.flags, []string{filepath.Join(bins, sc.pkg+".test"), "-test.v=test2json"}, sc.args)
				run := harness.RunIn(t, filepath.Join(fixtureRoot(t), sc.pkg), harness.GoEnv(), argv[0], argv[1:]...)
				if run.Code == 125 {
					t.Fatalf("%s engine: nettrap could not run (125):\n%s", e.name, run.Stderr)
				}
				o := framedOutcome(t, run.Stdout, pkg)
				got := verdict{code: run.Code, results: o.results, lines: o.lines, final: o.final}
				if i == 0 {
					first = got
					if errs := diffOutcome(o, sc.want, false); len(errs) > 0 || run.Code != sc.want.code {
						t.Errorf("notify engine, exit %d: %q", run.Code, errs)
					}
				} else if !reflect.DeepEqual(got, first) {
					t.Errorf("%s engine: verdicts differ from the notify engine's\n%s: %s\nnotify: %s\nstderr: %s\noutput:\n%s", e.name, e.name, got, first, run.Stderr, run.Stdout)
				}
				checkArrivals(t, h, mark, eps, sc.want.arrivals)
			}
		})
	}
}
