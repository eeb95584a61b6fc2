package ancestry

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// image is an executable's read-only data, by link-time address: the
// sections that hold type descriptors and their names.
type image struct {
	secs []section
}

type section struct {
	name string
	addr uint64
	data []byte
}

// readImage reads ef's allocated, non-executable sections that hold
// data from the file (not .bss, not .gopclntab, which holds no types).
func readImage(ef *elf.File) (*image, error) {
	im := &image{}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR != 0 {
			continue
		}
		if s.Name == ".gopclntab" || s.Name == ".noptrdata" || s.Name == ".data" || s.Name == ".go.buildinfo" {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.Name, err)
		}
		im.secs = append(im.secs, section{s.Name, s.Addr, b})
	}
	return im, nil
}

// bytes returns n bytes at addr, false when they are not all in one
// section.
func (im *image) bytes(addr uint64, n int) ([]byte, bool) {
	for _, s := range im.secs {
		if addr >= s.addr && addr-s.addr+uint64(n) <= uint64(len(s.data)) {
			o := addr - s.addr
			return s.data[o : o+uint64(n)], true
		}
	}
	return nil, false
}

func (im *image) word(addr uint64) (uint64, bool) {
	b, ok := im.bytes(addr, 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// name reads an abi.Name at addr: a flags byte, the length as a
// varint, the bytes.
func (im *image) name(addr uint64) (string, bool) {
	b, ok := im.bytes(addr, 3)
	if !ok {
		return "", false
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n == 0 || n > 256 {
		return "", false
	}
	s, ok := im.bytes(addr+1+uint64(w), int(n))
	return string(s), ok
}
