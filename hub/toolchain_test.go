package hub

import "testing"

// TestToolchain: a call from the go command, or from under it but under
// no inner nettrap, is the toolchain's; under --sealed only the go
// command's own; never one under an inner, a dropped inner, or outside
// the go command's tree.
func TestToolchain(t *testing.T) {
	// 1 ← 10 (nettrap) ← 20 (go) ← 30 (vet) ← 31
	//                            ← 40 (dropped inner) ← 41 (its test binary)
	//      ← 50 (an orphan, reparented to init)
	parents := map[int]int{10: 1, 20: 10, 30: 20, 31: 30, 40: 20, 41: 40, 50: 1}
	s := &Server{parent: func(p int) int { return parents[p] }, inners: map[int]*inner{},
		dropped: map[int]bool{40: true}, IsGo: func(p int) bool { return p == 20 }}
	for _, c := range []struct {
		pid            int
		open, isSealed bool
	}{
		{20, true, true}, {30, true, false}, {31, true, false},
		{40, false, false}, // an inner nettrap's own calls are not the toolchain's
		{41, false, false}, {50, false, false}, {10, false, false},
	} {
		for _, sealed := range []bool{false, true} {
			s.Sealed = sealed
			want := c.open
			if sealed {
				want = c.isSealed
			}
			if got := s.toolchain(c.pid); got != want {
				t.Errorf("toolchain(%d) sealed=%v = %v, want %v", c.pid, sealed, got, want)
			}
		}
	}
	s.Sealed = false
	if who := s.begin(31).Who(); !who.Toolchain {
		t.Errorf("begin(31).Who() = %+v, want the toolchain", who)
	}
	if who := s.begin(41).Who(); who.Toolchain || who.Package != "" || who.Test != "" {
		t.Errorf("begin(41).Who() = %+v, want generic", who)
	}
	if !s.Toolchain(31) || s.Toolchain(41) {
		t.Errorf("Toolchain(31) = %v, Toolchain(41) = %v; want true, false", s.Toolchain(31), s.Toolchain(41))
	}
	s.IsGo = nil
	if s.toolchain(20) {
		t.Error("toolchain without IsGo (a command run)")
	}
}

// TestOutside: a process under a registered inner (the inner's test
// binary and its subprocesses) is not outside; the inner itself, make and
// the go command are.
func TestOutside(t *testing.T) {
	// 1 ← 10 (make) ← 20 (go) ← 30 (inner) ← 31 (test binary) ← 32
	parents := map[int]int{10: 1, 20: 10, 30: 20, 31: 30, 32: 31}
	s := &Server{parent: func(p int) int { return parents[p] }, inners: map[int]*inner{30: {}}}
	for pid, want := range map[int]bool{10: true, 20: true, 30: true, 31: false, 32: false} {
		if got := s.Outside(pid); got != want {
			t.Errorf("Outside(%d) = %v, want %v", pid, got, want)
		}
	}
}

// TestToolchainUntilTheFirstInner: where the tests can reach the go
// command (GoReachable: no Landlock domain keeps them from it), its calls
// are the toolchain's only until an inner registers, before which no test
// binary has run; where they cannot, the exemption stays.
func TestToolchainUntilTheFirstInner(t *testing.T) {
	// 1 ← 10 (nettrap) ← 20 (go) ← 30 (vet)
	parents := map[int]int{10: 1, 20: 10, 30: 20}
	for _, reachable := range []bool{false, true} {
		s := &Server{parent: func(p int) int { return parents[p] }, inners: map[int]*inner{}, dropped: map[int]bool{},
			IsGo: func(p int) bool { return p == 20 }, GoReachable: reachable}
		if !s.toolchain(20) || !s.toolchain(30) {
			t.Errorf("reachable=%v: before any inner, the go command's calls are not the toolchain's", reachable)
		}
		if !s.add(&inner{pid: 40}) {
			t.Fatal("add refused")
		}
		if got := s.toolchain(20); got == reachable {
			t.Errorf("reachable=%v: after an inner registered, toolchain(20) = %v", reachable, got)
		}
		if got := s.toolchain(30); got == reachable {
			t.Errorf("reachable=%v: after an inner registered, toolchain(30) = %v", reachable, got)
		}
	}
}
