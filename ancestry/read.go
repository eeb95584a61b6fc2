package ancestry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/nettrap/nettrap/callstack"
)

// The runtime's goroutine states (runtime2.go; stable since Go 1.0 but
// for additions past these).
const (
	gRunnable  = 1
	gRunning   = 2
	gSyscall   = 3
	gWaiting   = 4
	gDead      = 6
	gPreempted = 9
	gScan      = 0x1000
)

// maxGoroutines bounds what is read of allgs: a chain read costs about
// a microsecond per goroutine (BenchmarkRead), and a process with more
// goroutines than this is not read at all.
const maxGoroutines = 1 << 16

// goroutine is one g as read from the process.
type goroutine struct {
	addr, id, parent uint64
	status           uint32
	gopc, startpc    uint64
	ancestors        uint64
	stackLo, stackHi uint64
	regs             callstack.Regs // where its stack can be unwound from; zero: it cannot
}

// prefetcher is a memory that reads many small pieces at once
// (callstack.ProcessMemory).
type prefetcher interface {
	Prefetch(addrs []uint64, n int)
}

// reader reads one process's goroutines.
type reader struct {
	l    *Layout
	mem  io.ReaderAt
	bias uint64
	buf  []byte
}

func (r *reader) word(addr uint64) (uint64, error) {
	var b [8]byte
	if _, err := r.mem.ReadAt(b[:], int64(addr)); err != nil {
		return 0, fmt.Errorf("reading %#x: %w", addr, err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// all reads every goroutine of allgs.
func (r *reader) all() ([]goroutine, error) {
	at := r.l.allgs + r.bias
	ptr, err := r.word(at)
	if err != nil {
		return nil, err
	}
	n, err := r.word(at + 8)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > 1<<24 {
		return nil, fmt.Errorf("allgs at %#x holds %d goroutines: not allgs", at, n)
	}
	if n > maxGoroutines {
		return nil, fmt.Errorf("%d goroutines: more than %d are not read (%w)", n, maxGoroutines, ErrUnsupported)
	}
	addrs := make([]byte, 8*n)
	if _, err := r.mem.ReadAt(addrs, int64(ptr)); err != nil {
		return nil, fmt.Errorf("reading allgs: %w", err)
	}
	if p, ok := r.mem.(prefetcher); ok {
		list := make([]uint64, n)
		for i := range list {
			list[i] = binary.LittleEndian.Uint64(addrs[8*i:])
		}
		p.Prefetch(list, int(r.l.off.span))
	}
	gs := make([]goroutine, 0, n)
	for i := uint64(0); i < n; i++ {
		g, err := r.g(binary.LittleEndian.Uint64(addrs[8*i:]))
		if err != nil {
			continue // freed or reused meanwhile: not the one asked for
		}
		gs = append(gs, g)
	}
	if len(gs) == 0 || gs[0].id != 1 {
		return nil, errors.New("allgs[0] is not the main goroutine: not allgs")
	}
	return gs, nil
}

// g reads the g at addr; an error when it does not hold its own address
// (g.sched.g): not a g.
func (r *reader) g(addr uint64) (goroutine, error) {
	o := r.l.off
	if cap(r.buf) < int(o.span) {
		r.buf = make([]byte, o.span)
	}
	b := r.buf[:o.span]
	if _, err := r.mem.ReadAt(b, int64(addr)); err != nil {
		return goroutine{}, err
	}
	w := func(off uint64) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	if w(o.schedG) != addr {
		return goroutine{}, fmt.Errorf("%#x is not a g", addr)
	}
	g := goroutine{
		addr: addr, id: w(o.goid), parent: w(o.parentGoid),
		status: binary.LittleEndian.Uint32(b[o.status:]),
		gopc:   w(o.gopc), startpc: w(o.startpc),
		stackLo: w(o.stackLo), stackHi: w(o.stackHi),
	}
	if o.ancestors != 0 {
		g.ancestors = w(o.ancestors)
	}
	switch g.status {
	case gRunnable, gWaiting, gPreempted:
		g.regs = callstack.Regs{PC: w(o.schedPC), SP: w(o.schedSP), LR: w(o.schedLR)}
	case gSyscall:
		g.regs = callstack.Regs{PC: w(o.syscallPC), SP: w(o.syscallSP)}
	}
	return g, nil
}
