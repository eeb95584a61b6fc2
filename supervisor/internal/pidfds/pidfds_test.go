package pidfds

import "testing"

// A dropped or evicted entry is closed only when its last user is done:
// a call (or its watch) never polls a descriptor that was closed under it.
// The descriptors are made-up numbers; closeFD records what is closed.
func TestPidfdsCloseOnlyUnused(t *testing.T) {
	closed := map[int]int{}
	p := Cache{closeFD: func(fd int) error { closed[fd]++; return nil }}
	a := p.Add(1, 1001)
	if got := p.Get(1); got != a || a.refs != 2 {
		t.Fatalf("get(1) = %p refs %d, want the added entry with 2 uses", got, a.refs)
	}
	p.Put(a)
	p.Drop(1, a)
	if closed[1001] != 0 || p.Get(1) != nil {
		t.Fatal("dropped entry closed while in use, or still cached")
	}
	p.Put(a)
	if closed[1001] != 1 {
		t.Errorf("dropped entry closed %d times after its last use, want 1", closed[1001])
	}

	// Eviction past maxPidfds closes what is unused and keeps the rest.
	busy := p.Add(2, 1002)
	idle := p.Add(3, 1003)
	p.Put(idle)
	tid := 4
	for ; len(p.m) < maxPidfds; tid++ {
		p.Put(p.Add(tid, 1000+tid))
	}
	p.Put(p.Add(tid, 1000+tid)) // one past the bound
	if closed[1003] != 1 || closed[1002] != 0 {
		t.Errorf("after eviction: idle closed %d times (want 1), busy %d (want 0)", closed[1003], closed[1002])
	}
	if len(p.m) > maxPidfds {
		t.Errorf("%d entries cached, bound is %d", len(p.m), maxPidfds)
	}
	p.Put(busy)
	if closed[1002] != 1 {
		t.Errorf("evicted entry closed %d times after its last use, want 1", closed[1002])
	}
	// Dropping a stale entry (its tid re-added since) keeps the new one.
	n := p.Add(5000, 6000)
	p.Drop(5000, a)
	if p.Get(5000) != n {
		t.Error("drop of a stale entry removed the current one")
	}
	for fd, k := range closed {
		if k > 1 {
			t.Errorf("fd %d closed %d times", fd, k)
		}
	}
}
