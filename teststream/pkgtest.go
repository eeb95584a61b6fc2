package teststream

// PackageTest is the name of the test that carries the package's own
// verdicts in ModeJSONFramed when a test of the package failed too.
//
// A verdict that no test owns (collection time, a goroutine no running
// test is known to have started) is the package's: FailPackage writes
// it as output outside any test, which test2json makes the package's
// own output events, as plain go test prints it. Reporters that list
// failed tests show a package's own output only when none of its tests
// failed: gotestsum (v1.13.0, testjson.Package.TestMainFailed) prints
// it in its "=== Failed" section, and its JUnit report makes a TestMain
// case of it, only then. A package with failed tests and a verdict of
// its own would show "DONE 9 tests, 3 failures" and no line saying why
// the package failed. So, in that case alone, the package's verdict
// lines are also the output of a failed test of this name, written
// before the final line: whatever lists failed tests lists it, with
// the reason. The output events of the package stay as they are.
//
// No test of the binary can have this name: the go command runs only
// functions named Test…, and a subtest's name has a '/'. Rerunning it
// (gotestsum --rerun-fails) runs no test, as rerunning a package's own
// failure does.
const PackageTest = "nettrap"

// packageTest writes, once, the test that carries the package's
// verdicts (PackageTest) when there are some and a test failed too.
// Called with r.mu held, before the final line.
func (r *Renderer) packageTest() {
	if r.mode != ModeJSONFramed || r.asIs || r.packaged || len(r.pkgVerdicts) == 0 {
		return
	}
	if !r.testFailed && len(r.doomed) == 0 {
		return // the package's own output is what reporters show
	}
	r.packaged = true
	r.flushPending(true)
	r.write(string(marker) + "=== RUN   " + PackageTest + "\n")
	for _, l := range r.pkgVerdicts {
		r.write(verdictText(l, "    "))
	}
	r.write(string(marker) + "--- FAIL: " + PackageTest + " (0.00s)\n")
	r.write(frameName(""))
	r.cur = ""
}
