package decode

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/callstack"
)

// held is what the stack and the chain of the held caller are read
// from, read once per call (Stack, then Chain for the same call, need
// the same): the executable's table, the thread's registers from
// /proc/TID/syscall (both engines' held threads show them: one blocked
// in the notification, one in its ptrace stop), and the load bias.
type held struct {
	tab  *callstack.Table
	sc   callstack.Syscall
	bias uint64
	err  error
}

// heldWait bounds the wait for a caller that the notification reached
// before it went to sleep (callstack.ReadSyscallBlocked): past it, the
// call is decided without its stack. The wait ends as soon as the
// caller sleeps or leaves the call, so the bound is only ever reached by
// a caller that is runnable but not running. 200 ms was the bound
// before; a record without its goroutine's creator, once under two
// suites with the race detector on two CPUs, is thought to have passed
// it.
const heldWait = 2 * time.Second

func (t *task) held() held {
	t.heldOnce.Do(func() {
		pid := t.Caller().PID
		if pid <= 0 {
			t.hold.err = errors.New("no caller")
			return
		}
		tab, err := tables.of(pid)
		if err != nil {
			t.hold.err = fmt.Errorf("%w: %v", ancestry.ErrUnsupported, err)
			return
		}
		t.hold.tab = tab
		if t.hold.sc, err = callstack.ReadSyscallBlocked(t.c.TID, heldWait, t.Pending); err == nil {
			t.hold.bias, err = tab.Bias(pid)
		}
		t.hold.err = err
	})
	return t.hold
}

// Stack implements decision.StackReader: the caller's stack, unwound
// from its registers with the symbol tables of its executable.
func (t *task) Stack() (*callstack.Stack, *callstack.Table, error) {
	h := t.held()
	if h.err != nil {
		return nil, nil, h.err
	}
	s := h.tab.Unwind(callstack.ProcessMemory(t.c.TID), h.bias, h.sc.Regs)
	if !t.Pending() {
		// The thread left the call: what was read may be another
		// call's stack.
		return nil, nil, errors.New("the caller left the call")
	}
	return s, h.tab, nil
}

// Chain implements decision.ChainReader: the chain of goroutines that
// created the caller's, read from the goroutine whose stack holds the
// caller's sp, with the layout of the caller's executable.
func (t *task) Chain() (*ancestry.Chain, error) {
	h := t.held()
	if h.err != nil {
		return nil, h.err
	}
	l, err := layouts.of(h.tab)
	if err != nil {
		return nil, err
	}
	c, err := l.Read(callstack.ProcessMemory(t.c.TID), h.bias, h.sc.Regs.SP)
	if err != nil {
		return nil, err
	}
	if !t.Pending() {
		return nil, errors.New("the caller left the call")
	}
	return c, nil
}

// layouts caches the goroutine layouts of the executables in tables,
// failures included (a Go older than 1.21 is not read again).
var layouts layoutCache

type layoutCache struct {
	mu sync.Mutex
	m  map[*callstack.Table]layoutEntry
}

type layoutEntry struct {
	l   *ancestry.Layout
	err error
}

func (c *layoutCache) of(tab *callstack.Table) (*ancestry.Layout, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[tab]; ok {
		return e.l, e.err
	}
	l, err := ancestry.Open(tab)
	if c.m == nil || len(c.m) >= maxTables {
		c.m = map[*callstack.Table]layoutEntry{}
	}
	c.m[tab] = layoutEntry{l, err}
	return l, err
}

// maxTables bounds the cache: a run has a few executables that call out
// (the test binaries of one package each, a helper or two).
const maxTables = 16

// tables caches the symbol tables of executables by device and inode
// (an executable rebuilt in place is a new file), failures included: a
// program that is not Go is not opened again at every denial.
var tables tableCache

type tableCache struct {
	mu sync.Mutex
	m  map[[2]uint64]tableEntry
}

type tableEntry struct {
	tab *callstack.Table
	err error
}

// of returns the table of pid's executable.
func (c *tableCache) of(pid int) (*callstack.Table, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/exe"
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, os.NewSyscallError("stat", err)
	}
	key := [2]uint64{st.Dev, st.Ino}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		return e.tab, e.err
	}
	tab, err := callstack.Open(path)
	if c.m == nil || len(c.m) >= maxTables {
		c.m = map[[2]uint64]tableEntry{}
	}
	c.m[key] = tableEntry{tab, err}
	return tab, err
}

// ExecTable is the symbol table of pid's executable, from the cache both
// engines' tasks share (and the kernel engine's held calls).
func ExecTable(pid int) (*callstack.Table, error) { return tables.of(pid) }

// LayoutOf is the goroutine layout of tab's executable, cached.
func LayoutOf(tab *callstack.Table) (*ancestry.Layout, error) { return layouts.of(tab) }
