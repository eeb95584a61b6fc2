package bpf

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// seccompData mirrors struct seccomp_data.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes encodes d for x/net/bpf's VM (see encodeSeccompData).
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	encodeSeccompData(b, d.nr, d.arch, d.ip, d.args)
	return b
}

// vmFor builds the program for goarch and loads it into a VM.
func vmFor(t testing.TB, goarch string) *bpf.VM {
	t.Helper()
	prog, err := Program(goarch)
	if err != nil {
		t.Fatalf("Program(%q): %v", goarch, err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM(%q): %v", goarch, err)
	}
	return vm
}

func run(t testing.TB, vm *bpf.VM, d seccompData) uint32 {
	t.Helper()
	r, err := vm.Run(d.bytes())
	if err != nil {
		t.Fatalf("vm.Run(%+v): %v", d, err)
	}
	return uint32(r)
}

func retName(r uint32) string {
	switch r {
	case retAllow:
		return "ALLOW"
	case retNotify:
		return "USER_NOTIF"
	case retKill:
		return "KILL_PROCESS"
	}
	return "unknown"
}

// TestSeccompDataLayout pins the byte layout the VM tests rely on, with
// the program's own offsets: nr at 0, arch at 4, low word of arg i at
// 16+8i and its high word 4 bytes later.
func TestSeccompDataLayout(t *testing.T) {
	d := seccompData{nr: 7, arch: 0xc000003e, args: [6]uint64{0, 0, 0, 0, 0x11111111_22222222}}
	b := d.bytes()
	be := binary.BigEndian
	if got := be.Uint32(b[offNr:]); got != 7 {
		t.Errorf("nr word = %#x", got)
	}
	if got := be.Uint32(b[offArch:]); got != 0xc000003e {
		t.Errorf("arch word = %#x", got)
	}
	if got := be.Uint32(b[argLo(4):]); got != 0x22222222 {
		t.Errorf("arg4 low word = %#x", got)
	}
	if got := be.Uint32(b[argLo(4)+4:]); got != 0x11111111 {
		t.Errorf("arg4 high word = %#x", got)
	}
}
