package run

import "testing"

// The advice of a run names go test's flags when go test started the
// test binaries it sees, the binary's when the user ran one by hand.
func TestTestsByGoTest(t *testing.T) {
	for _, tc := range []struct {
		kind       Kind
		parentIsGo bool
		want       bool
	}{
		{GoTest, false, true},         // nettrap -- go test
		{Command, false, true},        // nettrap -- make test: only go test's inners name tests
		{TestBinary, true, true},      // go test -exec nettrap
		{TestBinary, false, false},    // nettrap -- ./pkg.test
		{Generic, false, false},       // no tests named at all
		{InnerTestBinary, true, true}, // lines are the outer's, but be right anyway
	} {
		if got := testsByGoTest(tc.kind, tc.parentIsGo); got != tc.want {
			t.Errorf("testsByGoTest(%v, parent go %v) = %v, want %v", tc.kind, tc.parentIsGo, got, tc.want)
		}
	}
}
