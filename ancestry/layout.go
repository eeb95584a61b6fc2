package ancestry

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/nettrap/nettrap/callstack"
)

// ErrUnsupported is what Open's errors wrap: the executable's goroutines
// cannot be read at all (as opposed to a read that failed this time).
var ErrUnsupported = errors.New("goroutine creators not readable")

// A Layout is where one Go executable keeps its goroutines: read once
// per executable (Open) and shared; safe for concurrent use.
type Layout struct {
	tab   *callstack.Table
	allgs uint64 // link-time address of runtime.allgs
	off   offsets
}

// Open reads the layout of the executable tab was read from. It fails
// for an executable whose runtime does not record goroutines' creators
// (Go before 1.21), one whose type descriptors or forEachG it cannot
// read, and a position-independent one (its data holds pointers the
// dynamic loader relocates).
func Open(tab *callstack.Table) (*Layout, error) {
	if tab.PIE {
		return nil, fmt.Errorf("ancestry: %s: position-independent executables are not read: %w", tab.Path, ErrUnsupported)
	}
	ef, err := elf.Open(tab.Path)
	if err != nil {
		return nil, fmt.Errorf("ancestry: %w", err)
	}
	defer ef.Close()
	im, err := readImage(ef)
	if err != nil {
		return nil, fmt.Errorf("ancestry: %s: %w", tab.Path, err)
	}
	off, err := im.readOffsets()
	if err != nil {
		return nil, fmt.Errorf("ancestry: %s: %w (%w)", tab.Path, err, ErrUnsupported)
	}
	allgs, err := findAllgs(tab)
	if err != nil {
		return nil, fmt.Errorf("ancestry: %s: %w (%w)", tab.Path, err, ErrUnsupported)
	}
	return &Layout{tab: tab, allgs: allgs, off: off}, nil
}

// Table is the symbol table the layout was read with.
func (l *Layout) Table() *callstack.Table { return l.tab }
