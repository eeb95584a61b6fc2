package callstack

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Arch is the instruction set of an executable.
type Arch int

// The architectures a Table reads.
const (
	AMD64 Arch = iota + 1
	ARM64
)

func (a Arch) String() string {
	switch a {
	case AMD64:
		return "amd64"
	case ARM64:
		return "arm64"
	}
	return "unknown"
}

// A Table is the symbol tables of one Go executable, read once and
// shared: it is safe for concurrent use. Open one per executable and
// keep it (opening reads the whole .gopclntab and .text).
type Table struct {
	// Path is the file the table was read from.
	Path string
	// Arch is the executable's instruction set.
	Arch Arch
	// Module is the path of the executable's main module (for a go test
	// binary, the module under test); "" when it has no build
	// information.
	Module string
	// MainPackage is the import path of the main package ("" for a test
	// binary, whose main package is generated).
	MainPackage string
	// PIE tells whether the executable is position-independent: it is
	// loaded at an address its Bias says.
	PIE bool

	pcln      *pclntab
	sym       *gosym.Table
	text      []byte
	textAddr  uint64
	gofunc    []byte // the module's go:func.* data, for inline trees; nil: unknown
	dev, ino  uint64
	loads     []elf.ProgHeader
	goexit    fn
	hasGoexit bool
}

// Open reads the symbol tables of the Go executable at path. It needs
// .gopclntab (kept by -ldflags='-s -w') in the Go 1.20+ layout, and
// reads linux/amd64 and linux/arm64 ELF files.
func Open(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("callstack: %w", err)
	}
	defer f.Close()
	t := &Table{Path: path}
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.dev, t.ino = uint64(st.Dev), st.Ino
		}
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("callstack: %s: %w", path, err)
	}
	if err := t.read(ef); err != nil {
		return nil, fmt.Errorf("callstack: %s: %w", path, err)
	}
	if bi, err := buildinfo.Read(f); err == nil {
		t.Module = bi.Main.Path
		if !isTestBinary(bi) {
			t.MainPackage = bi.Path
		}
	}
	return t, nil
}

func isTestBinary(bi *buildinfo.BuildInfo) bool {
	return len(bi.Path) > 5 && bi.Path[len(bi.Path)-5:] == ".test"
}

func (t *Table) read(ef *elf.File) error {
	switch ef.Machine {
	case elf.EM_X86_64:
		t.Arch = AMD64
	case elf.EM_AARCH64:
		t.Arch = ARM64
	default:
		return fmt.Errorf("unsupported machine %v", ef.Machine)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		return errors.New("not a 64-bit little-endian ELF file")
	}
	t.PIE = ef.Type == elf.ET_DYN
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, p.ProgHeader)
		}
	}
	ps := ef.Section(".gopclntab")
	if ps == nil {
		return errors.New("no .gopclntab section: not a Go executable, or built by Go older than 1.20")
	}
	ts := ef.Section(".text")
	if ts == nil {
		return errors.New("no .text section")
	}
	pdata, err := ps.Data()
	if err != nil {
		return fmt.Errorf("reading .gopclntab: %w", err)
	}
	if t.text, err = ts.Data(); err != nil {
		return fmt.Errorf("reading .text: %w", err)
	}
	t.textAddr = ts.Addr
	md := findModuledata(ef, ps.Addr, pdata, ts)
	start := goTextStart(ef, md, ts)
	if t.pcln, err = parsePclntab(pdata, start); err != nil {
		return err
	}
	if t.sym, err = gosym.NewTable(nil, gosym.NewLineTable(pdata, start)); err != nil {
		return fmt.Errorf("reading .gopclntab: %w", err)
	}
	if g := t.sym.LookupFunc("runtime.goexit"); g != nil {
		t.goexit, t.hasGoexit = t.pcln.find(g.Entry)
	}
	t.gofunc = gofuncData(ef, md, ps.Addr, pdata)
	return nil
}

// goTextStart is the address the pclntab's function offsets count from:
// runtime.text, the start of Go's code. With Go's own linker that is
// where .text starts; a binary the host linker linked (cgo's external
// linking) has C start-up code first, and runtime.text is further on.
// From the symbol table when there is one, else from the moduledata
// (md, its text word: the pclntab header's textStart is 0 in the file),
// else .text. Either must fall inside .text.
func goTextStart(ef *elf.File, md []byte, ts *elf.Section) uint64 {
	inText := func(a uint64) bool { return a >= ts.Addr && a < ts.Addr+ts.Size }
	if syms, err := ef.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" && inText(s.Value) {
				return s.Value
			}
		}
	}
	if md != nil {
		if a := binary.LittleEndian.Uint64(md[mdText*8:]); inText(a) {
			return a
		}
	}
	return ts.Addr
}

// Words of runtime.moduledata (Go 1.20 to 1.26).
const (
	mdPcHeader = 0
	mdText     = 22
	mdGofunc   = 40
	mdEpclntab = 41
	mdWords    = 42 // up to epclntab
)

// findModuledata returns the module's runtime.moduledata (and what
// follows it): in the .go.module section, or else in .noptrdata; nil
// when neither has it. One is taken only when its pcHeader and epclntab
// are this executable's .gopclntab and its text is in .text.
func findModuledata(ef *elf.File, pclnAddr uint64, pdata []byte, ts *elf.Section) []byte {
	const wordsToScan = 1 << 16
	word := func(md []byte, w int) uint64 { return binary.LittleEndian.Uint64(md[w*8:]) }
	matches := func(md []byte) bool {
		text := word(md, mdText)
		return word(md, mdPcHeader) == pclnAddr && word(md, mdEpclntab) == pclnAddr+uint64(len(pdata)) &&
			text >= ts.Addr && text < ts.Addr+ts.Size
	}
	for _, name := range []string{".go.module", ".noptrdata"} {
		s := ef.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		for o := 0; o+mdWords*8 <= len(b) && o < wordsToScan*8; o += 8 {
			if matches(b[o:]) {
				return b[o:]
			}
		}
	}
	return nil
}

// gofuncData returns the data from the module's go:func.* on (the base
// of funcdata offsets, for inline trees), from its moduledata md; nil
// when it cannot be told.
func gofuncData(ef *elf.File, md []byte, pclnAddr uint64, pdata []byte) []byte {
	if md == nil {
		return nil
	}
	g := binary.LittleEndian.Uint64(md[mdGofunc*8:])
	if g >= pclnAddr && g < pclnAddr+uint64(len(pdata)) {
		return pdata[g-pclnAddr:]
	}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || g < s.Addr || g >= s.Addr+s.Size {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil
		}
		return b[g-s.Addr:]
	}
	return nil
}

// code returns up to n bytes of .text ending at addr (a link-time
// address): fewer at the start of .text, nil outside it.
func (t *Table) code(addr uint64, n int) []byte {
	if addr <= t.textAddr || addr > t.textAddr+uint64(len(t.text)) {
		return nil
	}
	o := addr - t.textAddr
	return t.text[o-min(o, uint64(n)) : o]
}

// SameFile tells whether fi (of /proc/PID/exe, say) is the file the
// table was read from: device and inode, for a cache of tables.
func (t *Table) SameFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && t.ino != 0 && uint64(st.Dev) == t.dev && st.Ino == t.ino
}
