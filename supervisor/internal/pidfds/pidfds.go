package pidfds

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Cache caches a pidfd per calling thread id, so that an emulated call
// does not pay pidfd_open and close each time (about a microsecond of the
// few an emulated call adds).
//
// A cached pidfd never names another task than the one it was opened on:
// it refers to that task's struct pid, which is not reused even when the
// number is. Once that task is gone pidfd_getfd fails with ESRCH, and the
// entry is dropped and opened anew (supervisor's borrow checks the notification after
// a fresh open, as without the cache). Entries are counted while in use, so
// that an eviction never closes a descriptor a call (or its watch) still
// polls.
type Cache struct {
	mu sync.Mutex
	m  map[int]*Entry
	// closeFD is unix.Close; the tests watch it.
	closeFD func(int) error
}

// Entry is one cached pidfd, FD, counted while in use.
type Entry struct {
	FD      int
	refs    int
	dropped bool
}

// maxPidfds bounds the cache; past it, every unused entry is closed.
const maxPidfds = 1024

// Get returns the cached entry for tid (counted in use), or nil.
func (p *Cache) Get(tid int) *Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[tid]
	if e != nil {
		e.refs++
	}
	return e
}

// Add caches a freshly opened pidfd for tid, counted in use.
func (p *Cache) Add(tid, fd int) *Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[int]*Entry{}
	}
	if len(p.m) >= maxPidfds {
		for t, e := range p.m {
			p.dropLocked(t, e)
		}
	}
	if old := p.m[tid]; old != nil {
		p.dropLocked(tid, old)
	}
	e := &Entry{FD: fd, refs: 1}
	p.m[tid] = e
	return e
}

// Drop forgets tid's entry e (its task is gone).
func (p *Cache) Drop(tid int, e *Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[tid] == e {
		p.dropLocked(tid, e)
	}
}

func (p *Cache) dropLocked(tid int, e *Entry) {
	delete(p.m, tid)
	e.dropped = true
	if e.refs == 0 {
		p.close(e.FD)
	}
}

func (p *Cache) close(fd int) {
	if p.closeFD != nil {
		p.closeFD(fd)
		return
	}
	unix.Close(fd)
}

// Put ends a use of e.
func (p *Cache) Put(e *Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.dropped {
		p.close(e.FD)
	}
}
