package gotest

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/teststream"
)

var updateMarkers = flag.Bool("update-markers", false,
	"record testdata/markers/*.in again with each Go release listed in markerRecordings (GOTOOLCHAIN downloads them)")

// markerRecording is one recorded run of the markers fixture.
type markerRecording struct {
	file      string // in testdata/markers
	toolchain string // GOTOOLCHAIN when recording
	minor     int    // the release's minor version: Go 1.minor
	framing   teststream.Framing
	args      []string
}

// markerRecordings are the fixture's -test.v=test2json output under
// every Go release that frames it so (1.20 and later), its full paths
// (-test.fullpath, 1.21+) and its plain -test.v=true output, which
// nettrap reads when the user's own -test.v wins (FramingAny).
var markerRecordings = []markerRecording{
	{"go1.20.in", "go1.20.14", 20, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.21.in", "go1.21.13", 21, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.22.in", "go1.22.12", 22, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.23.in", "go1.23.12", 23, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.24.in", "go1.24.13", 24, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.25.in", "go1.25.5", 25, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.26.in", "go1.26.8", 26, teststream.FramingMarked, []string{"-test.v=test2json"}},
	{"go1.26-fullpath.in", "go1.26.8", 26, teststream.FramingMarked, []string{"-test.v=test2json", "-test.fullpath"}},
	{"go1.26-verbose.in", "go1.26.8", 26, teststream.FramingAny, []string{"-test.v=true"}},
}

// wantMarked is whether each probe of the fixture finds its test
// marked, under Go 1.minor. Everything else the fixture prints or logs
// (the marker's text, the marker among other words or on a second
// line, another test's marker, a bad value) marks nothing.
func wantMarked(minor int) map[string]bool {
	return map[string]bool{
		"TestLog":                   true,
		"TestLog/sub":               true, // its parent's marker
		"TestLogf":                  true,
		"TestUnmarked":              false,
		"TestPrinted":               false, // fmt.Println of the marker's text
		"TestNotAlone":              false,
		"TestSubtest/marked/deeper": true,
		"TestSubtest/marked":        true,
		"TestSubtest":               false, // its subtest's marker
		"TestSubtest/sibling":       false,
		"TestParallel/a":            true,
		"TestParallel/b":            false, // the test beside it logged one
		"TestGoroutineVictim":       false, // another test's goroutine printed the text
		"TestImitation":             true,  // the frame imitated exactly: the limit
		"TestLateLog":               minor >= 25,
		"TestBadValue":              false,
	}
}

// wantStale are the tests that logged the marker themselves and made
// no attempt (none does in the fixture).
func wantStale(minor int) []string {
	stale := []string{"TestImitation", "TestLog", "TestLogf", "TestParallel/a", "TestSubtest/marked"}
	if minor >= 25 {
		stale = append(stale, "TestLateLog")
	}
	slices.Sort(stale)
	return stale
}

// TestLogMarker feeds each recorded stream of the fixture to a tracker
// and asks, at each probe, whether the probe's test is marked; at the
// end, which markers are stale and which bad.
func TestLogMarker(t *testing.T) {
	for _, rec := range markerRecordings {
		t.Run(rec.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "markers", rec.file))
			if err != nil {
				t.Fatal(err)
			}
			checkMarkers(t, in, rec, false)
		})
	}
}

// TestLogMarkerSealed: under --sealed a logged marker is seen (a denial
// says it was ignored) but opens nothing, and none is stale.
func TestLogMarkerSealed(t *testing.T) {
	rec := markerRecordings[len(markerRecordings)-3]
	in, err := os.ReadFile(filepath.Join("testdata", "markers", rec.file))
	if err != nil {
		t.Fatal(err)
	}
	checkMarkers(t, in, rec, true)
}

// checkMarkers runs the check of TestLogMarker on one stream.
func checkMarkers(t *testing.T, in []byte, rec markerRecording, sealed bool) {
	t.Helper()
	f := newTrackerFixtureFraming(t, rec.framing)
	f.tr.Sealed = sealed
	want := wantMarked(rec.minor)
	probed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(in))
	for sc.Scan() {
		f.emit(sc.Text())
		name, ok := strings.CutPrefix(sc.Text(), "probe: ")
		if !ok {
			continue
		}
		f.who() // drains the pipe into the parser
		probed[name] = true
		marked, marker, _ := f.tr.marked(name)
		if marked != want[name] || marker != want[name] {
			t.Errorf("at %s's probe: marked %v, marker %v; want %v", name, marked, marker, want[name])
		}
		if sealed && marked {
			ctx := policy.Context{Marked: marked, Marker: marker}
			d := (&policy.Policy{Sealed: true}).Decide(policy.Attempt{Kind: policy.Destination, Class: classify.External, Context: ctx})
			if d.Verdict != audit.Denied || !strings.HasPrefix(d.Reason, audit.ReasonMarkerIgnored) {
				t.Errorf("%s under --sealed: %+v, want denied, the marker ignored", name, d)
			}
		}
	}
	for name := range want {
		if !probed[name] {
			t.Errorf("no probe of %s in the stream", name)
		}
	}
	out, recs := f.finishRecords()
	var stale []string
	var bad []audit.Record
	for _, r := range recs {
		switch r.Decision {
		case audit.StaleMarker:
			stale = append(stale, r.Test)
		case audit.BadMarker:
			bad = append(bad, r)
		}
	}
	slices.Sort(stale)
	if wantS := wantStale(rec.minor); !sealed && !slices.Equal(stale, wantS) || sealed && len(stale) > 0 {
		t.Errorf("stale markers %q, want %q (none under --sealed)", stale, wantS)
	}
	if len(bad) != 1 || bad[0].Test != "TestBadValue" || bad[0].MarkerValue != "netwrok" ||
		bad[0].Reason != `unknown marker "nettrap:netwrok" logged; the marker is t.Log("nettrap:network")` {
		t.Errorf("bad markers %+v, want TestBadValue's nettrap:netwrok", bad)
	}
	line := `nettrap: unknown marker "nettrap:netwrok" logged: the marker is t.Log("nettrap:network")`
	if !strings.Contains(out, line) || !strings.Contains(out, "--- FAIL: TestBadValue") {
		t.Errorf("output lacks TestBadValue's failure %q:\n%s", line, out)
	}
}

// newTrackerFixtureFraming is newTrackerFixture for a stream in framing f
// (FramingAny: the user's own -test.v=true won).
func newTrackerFixtureFraming(t *testing.T, f teststream.Framing) *trackerFixture {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	tr, err := NewTracker(r, out, Plan{Mode: teststream.ModeVerbose, Framing: f}, "example.com/markers", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return &trackerFixture{t: t, w: w, tr: tr, out: out}
}

// TestLogMarkerLive builds the fixture with the go command at hand and
// checks its run as TestLogMarker checks the recorded ones, so that a
// new Go release that frames logs otherwise shows here. With
// -update-markers it records the streams again, with every release of
// markerRecordings.
func TestLogMarkerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the markers fixture")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not in PATH")
	}
	if *updateMarkers {
		for _, rec := range markerRecordings {
			in := runMarkers(t, rec.toolchain, rec.args)
			if err := os.WriteFile(filepath.Join("testdata", "markers", rec.file), in, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	minor := localMinor(t)
	for _, rec := range markerRecordings[len(markerRecordings)-3:] {
		t.Run(rec.file, func(t *testing.T) {
			rec.minor = minor
			checkMarkers(t, runMarkers(t, "local", rec.args), rec, false)
		})
	}
}

// runMarkers builds the fixture with toolchain and runs it with args,
// stdout and stderr on one pipe; the fixture's directory is /src in
// what it prints (-test.fullpath).
func runMarkers(t *testing.T, toolchain string, args []string) []byte {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "markers"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "markers.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOTOOLCHAIN="+toolchain, "GOWORK=off", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture with %s: %v\n%s", toolchain, err, out)
	}
	// Two parallel tests wait for each other (TestParallel).
	run := exec.Command(bin, append(slices.Clone(args), "-test.parallel=2")...)
	run.Dir = dir
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Run(); err != nil {
		t.Fatalf("running the fixture built with %s: %v\n%s", toolchain, err, out.Bytes())
	}
	return bytes.ReplaceAll(out.Bytes(), []byte(dir+"/"), []byte("/src/"))
}

// localMinor is the minor version of the go command at hand: 26 for go1.26.8.
func localMinor(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "go1.")
	v, _, _ = strings.Cut(v, ".")
	v, _, _ = strings.Cut(v, "rc")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("go env GOVERSION %q: %v", out, err)
	}
	return n
}
