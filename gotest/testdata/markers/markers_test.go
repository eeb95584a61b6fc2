// Package markers is the fixture of gotest's marker tests: each test
// logs, prints or imitates the marker t.Log("nettrap:network"), and
// prints "probe: NAME" where the tests ask whether NAME is marked.
// testdata/markers/go1.N.in are its -test.v=test2json output under
// each Go release (-update-markers records them again).
package markers

import (
	"fmt"
	"os"
	"testing"
)

// probe says where the tests ask whether name is marked now. A probe
// is fmt.Println output: it marks nothing, and the stream may attribute
// it to another running test (parallel subtests).
func probe(name string) { fmt.Println("probe: " + name) }

// The marker, logged: it marks the test and its subtests.
func TestLog(t *testing.T) {
	t.Log("nettrap:network")
	probe("TestLog")
	t.Run("sub", func(t *testing.T) { probe("TestLog/sub") })
}

func TestLogf(t *testing.T) {
	t.Logf("nettrap:%s", "network")
	probe("TestLogf")
}

func TestUnmarked(t *testing.T) { probe("TestUnmarked") }

// The marker's text printed, not logged, marks nothing.
func TestPrinted(t *testing.T) {
	fmt.Println("nettrap:network")
	fmt.Println("    nettrap:network")
	fmt.Fprintln(os.Stderr, "nettrap:network")
	probe("TestPrinted")
}

// The marker among other words, or on a log message's second line,
// marks nothing.
func TestNotAlone(t *testing.T) {
	t.Log("nettrap:network please")
	t.Log("see nettrap:network")
	t.Log("nettrap:", "network")
	t.Log("two lines\nnettrap:network")
	t.Log("nettrap:network ")
	probe("TestNotAlone")
}

// A subtest's marker marks it and its subtests, not its parent nor its
// siblings.
func TestSubtest(t *testing.T) {
	t.Run("marked", func(t *testing.T) {
		t.Log("nettrap:network")
		t.Run("deeper", func(t *testing.T) { probe("TestSubtest/marked/deeper") })
		probe("TestSubtest/marked")
	})
	probe("TestSubtest")
	t.Run("sibling", func(t *testing.T) { probe("TestSubtest/sibling") })
}

// A parallel test's marker marks it, not the test running beside it
// (the testing package names the test before its log line). Run with
// -test.parallel=2 at least.
func TestParallel(t *testing.T) {
	logged, probed := make(chan struct{}), make(chan struct{})
	t.Run("a", func(t *testing.T) {
		t.Parallel()
		t.Log("nettrap:network")
		close(logged)
		<-probed
		probe("TestParallel/a")
	})
	t.Run("b", func(t *testing.T) {
		t.Parallel()
		<-logged
		probe("TestParallel/b")
		close(probed)
	})
}

var (
	release = make(chan struct{})
	printed = make(chan struct{})
)

// A goroutine TestGoroutine left running prints the marker's text
// during TestGoroutineVictim: nothing is marked.
func TestGoroutine(t *testing.T) {
	go func() {
		<-release
		fmt.Println("nettrap:network")
		close(printed)
	}()
}

func TestGoroutineVictim(t *testing.T) {
	close(release)
	<-printed
	probe("TestGoroutineVictim")
}

// An exact imitation of the frame is taken for the marker: the stream
// cannot tell it from t.Log (as a printed ^V=== ATTR line cannot be
// told from t.Attr). The default mode trusts the tests' code; --sealed
// trusts no marker.
func TestImitation(t *testing.T) {
	fmt.Print("    markers_test.go:1: nettrap:network\n")
	probe("TestImitation")
}

// A subtest's goroutine logs after the subtest ended, while its parent
// runs. Go 1.25 and later print the line as the parent's output (it
// marks the parent); earlier releases print it after the parent's end
// (it marks nothing).
func TestLateLog(t *testing.T) {
	start, logged := make(chan struct{}), make(chan struct{})
	t.Run("sub", func(t *testing.T) {
		go func() {
			<-start
			t.Log("nettrap:network")
			close(logged)
		}()
	})
	close(start)
	<-logged
	probe("TestLateLog")
}

// A marker with another value fails the test under nettrap (a bad
// marker), and marks nothing.
func TestBadValue(t *testing.T) {
	t.Log("nettrap:netwrok")
	probe("TestBadValue")
}
