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
	if t.pcln, err = parsePclntab(pdata, ts.Addr); err != nil {
		return err
	}
	if t.sym, err = gosym.NewTable(nil, gosym.NewLineTable(pdata, ts.Addr)); err != nil {
		return fmt.Errorf("reading .gopclntab: %w", err)
	}
	if g := t.sym.LookupFunc("runtime.goexit"); g != nil {
		t.goexit, t.hasGoexit = t.pcln.find(g.Entry)
	}
	t.gofunc = findGofunc(ef, ps.Addr, pdata, ts.Addr)
	return nil
}

// findGofunc returns the data from the module's go:func.* on (the base
// of funcdata offsets), found through its moduledata: in the .go.module
// section, or else in .noptrdata; nil when neither has it. A moduledata
// is taken only when the words around gofunc name this executable's
// sections: pcHeader and epclntab its .gopclntab, text its .text,
// noptrdata, data and bss theirs, rodata its .rodata (the layout of
// runtime.moduledata from Go 1.20 to 1.26).
func findGofunc(ef *elf.File, pclnAddr uint64, pdata []byte, textAddr uint64) []byte {
	const (
		words       = 42 // up to epclntab
		wordsToScan = 1 << 16
	)
	addr := func(name string) uint64 {
		if s := ef.Section(name); s != nil {
			return s.Addr
		}
		return ^uint64(0)
	}
	want := map[int]uint64{
		0:  pclnAddr,
		22: textAddr,
		24: addr(".noptrdata"),
		26: addr(".data"),
		28: addr(".bss"),
		39: addr(".rodata"),
		41: pclnAddr + uint64(len(pdata)),
	}
	matches := func(md []byte) bool {
		for w, v := range want {
			if binary.LittleEndian.Uint64(md[w*8:]) != v {
				return false
			}
		}
		return true
	}
	var md []byte
	for _, name := range []string{".go.module", ".noptrdata"} {
		s := ef.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		for o := 0; o+words*8 <= len(b) && o < wordsToScan*8; o += 8 {
			if binary.LittleEndian.Uint64(b[o:]) == pclnAddr && matches(b[o:]) {
				md = b[o:]
				break
			}
		}
		if md != nil {
			break
		}
	}
	if md == nil {
		return nil
	}
	const wGofunc = 40
	g := binary.LittleEndian.Uint64(md[wGofunc*8:])
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
