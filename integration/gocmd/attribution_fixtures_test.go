package gocmd

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"strings"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
)

// What the fixtures in testdata dial (see testdata/fx): every test its own
// port, so that a denial line names the test that made the attempt.
const (
	fxExternal = "203.0.113.7"
	fxPrivate  = "10.0.0.1"
	fxHome     = "192.168.1.1"
)

func tcpEP(host string, port int) fakehost.Endpoint {
	return fakehost.TCP(netip.AddrPortFrom(netip.MustParseAddr(host), uint16(port)).String())
}

func udpEP(host string, port int) fakehost.Endpoint {
	return fakehost.UDP(netip.AddrPortFrom(netip.MustParseAddr(host), uint16(port)).String())
}

// fixtureEndpoints are every destination the fixtures aim at, all served
// by fake hosts during each run, so that a leak anywhere is recorded.
func fixtureEndpoints() []fakehost.Endpoint {
	var eps []fakehost.Endpoint
	for p := 1001; p <= 1013; p++ {
		eps = append(eps, tcpEP(fxExternal, p))
	}
	eps = append(eps, udpEP(fxExternal, 1003),
		tcpEP(fxExternal, 1101), tcpEP(fxExternal, 1102),
		tcpEP(fxPrivate, 2001), tcpEP(fxPrivate, 2002), tcpEP(fxHome, 2003), tcpEP(fxPrivate, 2004),
		tcpEP(fxExternal, 3001), tcpEP(fxExternal, 3002))
	return eps
}

// expectation is the verdict of one fixture run.
type expectation struct {
	results    map[string]string           // every test that reports a result
	lines      map[string][]*regexp.Regexp // nettrap lines per test ("" for the package), in order
	quietLines map[string][]*regexp.Regexp // in quiet mode, if different
	final      string                      // the binary's PASS/FAIL line ("" when none)
	code       int                         // nettrap's exit status
	arrivals   []arrival                   // what reaches the fake hosts
}

// blocked is the denial line of op (e.g. "connect tcp") to host:port of
// class, made in who (a test name, or a suffix such as "at collection
// time"). An IPv4 destination may show v4-mapped, as a dual-stack socket
// carries it.
func blocked(op, host string, port int, class, who string) *regexp.Regexp {
	if !strings.HasPrefix(who, " ") {
		who = " during " + who
	}
	return regexp.MustCompile(fmt.Sprintf(`^Outbound network blocked: %s (%s|\[::ffff:%s\]):%d \(%s\)%s`,
		regexp.QuoteMeta(op), regexp.QuoteMeta(host), regexp.QuoteMeta(host), port, class, regexp.QuoteMeta(who)))
}

// where matches the location a line may give after its test (the
// caller's stack: " at FILE:LINE (pkg.Func, called from …)").
const where = `( at \S+:\d+ \([^)]*\))?`

func ext(op string, port int, who string) *regexp.Regexp {
	return blocked(op, fxExternal, port, "external", who)
}

func note(text string) *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(text)) }

func staleNote(test string) *regexp.Regexp {
	return note("stale marker: " + test + " may use the network")
}

const atCollection = " at collection time"

func res(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// seqExpect is the verdict of package seq, run whole. allowTest: with
// --allow-test for TestAllowFlag, TestSubtests (and so its subtests) and
// TestClean.
func seqExpect(allowTest bool) expectation {
	e := expectation{
		results: res(
			"TestClean", "PASS", "TestLeak", "FAIL", "TestSwallowed", "FAIL", "TestGoroutine", "FAIL",
			"TestSubprocess", "FAIL", "TestCleanup", "FAIL", "TestSkipAfterAttempt", "FAIL",
			"TestSubtests", "FAIL", "TestSubtests/clean", "PASS", "TestSubtests/leak", "FAIL", "TestSubtests/after", "PASS",
			"TestMarked", "PASS", "TestSiblingAfterMarked", "FAIL",
			"TestMarkedParent", "PASS", "TestMarkedParent/a", "PASS", "TestMarkedParent/b", "PASS",
			"TestStale", "PASS", "TestBogusAttr", "FAIL", "TestAllowFlag", "FAIL", "TestLast", "PASS"),
		lines: map[string][]*regexp.Regexp{
			"TestLeak":               {ext("connect tcp", 1001, "TestLeak")},
			"TestSwallowed":          {ext("connect tcp", 1002, "TestSwallowed")},
			"TestGoroutine":          {ext("sendto udp", 1003, "TestGoroutine")},
			"TestSubprocess":         {ext("connect tcp", 1004, "TestSubprocess")},
			"TestCleanup":            {ext("connect tcp", 1005, "TestCleanup")},
			"TestSkipAfterAttempt":   {ext("connect tcp", 1006, "TestSkipAfterAttempt")},
			"TestSubtests/leak":      {ext("connect tcp", 1007, "TestSubtests/leak")},
			"TestSiblingAfterMarked": {ext("connect tcp", 1009, "TestSiblingAfterMarked")},
			"TestBogusAttr":          {note(`unknown value "bogus" of the "nettrap" attribute`)},
			"TestAllowFlag":          {ext("connect tcp", 1013, "TestAllowFlag")},
			"":                       {staleNote("TestStale")},
		},
		final: "FAIL",
		code:  1,
		arrivals: []arrival{
			{tcpEP(fxExternal, 1008), "TestMarked"},
			{tcpEP(fxExternal, 1010), "TestMarkedParent/a"},
			{tcpEP(fxExternal, 1011), "TestMarkedParent/b"},
			{tcpEP(fxExternal, 1012), "TestMarkedParent/cleanup"},
		},
	}
	if allowTest {
		maps.Copy(e.results, res("TestAllowFlag", "PASS", "TestSubtests", "PASS", "TestSubtests/leak", "PASS"))
		delete(e.lines, "TestAllowFlag")
		delete(e.lines, "TestSubtests/leak")
		// TestClean, named by the rule but making no attempt, is no stale
		// marker: a rule is reported unused or not by the run as a whole.
		e.arrivals = append(e.arrivals,
			arrival{tcpEP(fxExternal, 1007), "TestSubtests/leak"},
			arrival{tcpEP(fxExternal, 1013), "TestAllowFlag"})
	}
	return e
}

// seqAllowTests is the --allow-test of seqExpect(true).
const seqAllowTests = `^(TestAllowFlag|TestSubtests|TestClean)$`

// parallelAmbiguousExpect: rerun is the flag the hint advises, as the
// user would type it where the binary was started (-parallel=1 to go
// test, -test.parallel=1 to a test binary run by hand).
func parallelAmbiguousExpect(rerun string) expectation {
	amb := ext("connect tcp", 1101, "one of TestParA, TestParB (ambiguous: parallel tests were running; rerun with "+rerun+" to pin it)")
	return expectation{
		results: res("TestParA", "FAIL", "TestParB", "FAIL"),
		lines:   map[string][]*regexp.Regexp{"TestParA": {amb}, "TestParB": {amb}},
		final:   "FAIL", code: 1,
	}
}

func parallelPinnedExpect() expectation {
	return expectation{
		results: res("TestPinnedA", "FAIL", "TestPinnedB", "PASS"),
		lines:   map[string][]*regexp.Regexp{"TestPinnedA": {ext("connect tcp", 1102, "TestPinnedA")}},
		final:   "FAIL", code: 1,
	}
}

func testmainExpect() expectation {
	return expectation{
		results: res("TestOK", "PASS", "TestMarkedOK", "PASS"),
		lines: map[string][]*regexp.Regexp{"": {
			blocked("connect tcp", fxPrivate, 2001, "private", atCollection),
			blocked("connect tcp", fxPrivate, 2002, "private", atCollection),
		}},
		final: "FAIL", code: 1,
		arrivals: []arrival{{tcpEP(fxPrivate, 2004), "TestMarkedOK"}},
	}
}

func initExpect() expectation {
	return expectation{
		results: res("TestOK", "PASS"),
		lines:   map[string][]*regexp.Regexp{"": {blocked("connect tcp", fxHome, 2003, "private", atCollection)}},
		final:   "FAIL", code: 1,
	}
}

// A panic ends the binary with status 2 and no final line.
func panicExpect() expectation {
	return expectation{
		results: res("TestOK", "PASS", "TestPanic", "FAIL"),
		lines:   map[string][]*regexp.Regexp{"TestPanic": {ext("connect tcp", 3001, "TestPanic")}},
		code:    2,
	}
}

// exitExpect: os.Exit(0) in a test. Run directly, the binary exits 0
// without reporting the test; nettrap still shows the denial (in quiet
// mode at the end, as there is no report to put it under) and exits 1.
// Under go test, -test.paniconexit0 turns the exit into a failing panic.
func exitExpect(panicOnExit0 bool) expectation {
	line := map[string][]*regexp.Regexp{"TestExit": {ext("connect tcp", 3002, "TestExit")}}
	if panicOnExit0 {
		return expectation{results: res("TestOK", "PASS", "TestExit", "FAIL"), lines: line, code: 2}
	}
	return expectation{
		results:    res("TestOK", "PASS"),
		lines:      line,
		quietLines: map[string][]*regexp.Regexp{"": line["TestExit"]},
		code:       1,
	}
}
