package main

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// struct bpf_sock_addr (include/uapi/linux/bpf.h): the destination a
// connect or a send with an address names, as the kernel copied it from
// the caller. The addresses are in network byte order; a 32-bit load on
// a little-endian machine (amd64, arm64) puts the first octet lowest.
const (
	offUserIP4  = 4  // __u32 user_ip4
	offUserIP6  = 8  // __u32 user_ip6[4]
	offUserPort = 24 // __u32 user_port (network order, in the low 16 bits)
	allowedKey  = 0  // counts' slot of allowed calls
	deniedKey   = 1  // and of refused ones
	loopback4   = 127
	ip6One      = 0x01000000 // the last word of ::1, loaded little-endian
	// ip6Mapped is the third word of ::ffff:0:0/96 loaded little-endian,
	// 0xffff0000, as the int32 a 32-bit comparison (JMP32) takes.
	ip6Mapped = -0x10000
)

// hook is one program of the floor: where it attaches and which family
// of destination it reads.
type hook struct {
	attach ebpf.AttachType
	v6     bool
}

// hooks are the calls with a destination the kernel lets a cgroup program
// decide: connect (TCP and UDP) and sendmsg/sendto with an address (UDP).
var hooks = []hook{
	{ebpf.AttachCGroupInet4Connect, false},
	{ebpf.AttachCGroupInet6Connect, true},
	{ebpf.AttachCGroupUDP4Sendmsg, false},
	{ebpf.AttachCGroupUDP6Sendmsg, true},
}

// newCounts makes the per-CPU array the programs count in: one slot for
// allowed calls, one for refused ones.
func newCounts() (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "kfloor_counts", Type: ebpf.PerCPUArray,
		KeySize: 4, ValueSize: 8, MaxEntries: 2})
	if err != nil {
		return nil, fmt.Errorf("make the counters' map: %w", err)
	}
	return m, nil
}

// program builds h's program: loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104)
// and unspecified (0.0.0.0, ::, ::ffff:0.0.0.0) destinations pass, every
// other is refused (return 0: the call fails with EPERM). Each verdict
// adds one to its slot of counts.
func program(h hook, counts *ebpf.Map) (*ebpf.Program, error) {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	if h.v6 {
		insns = append(insns, v6Checks("deny")...)
	} else {
		insns = append(insns, v4Checks("deny")...)
	}
	insns = append(insns, verdict("allow", allowedKey, 1, counts)...)
	insns = append(insns, verdict("deny", deniedKey, 0, counts)...)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "kfloor", Type: ebpf.CGroupSockAddr,
		AttachType: h.attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the %s program: %w", h.attach, err)
	}
	return p, nil
}

// v4Checks jumps to "allow" for 127.0.0.0/8 and 0.0.0.0, else to other.
// It reads the context from R6.
func v4Checks(other string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, offUserIP4, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "allow"),
		asm.And.Imm(asm.R2, 0xff),
		asm.JEq.Imm(asm.R2, loopback4, "allow"),
		asm.Ja.Label(other),
	}
}

// v6Checks jumps to "allow" for ::1, ::, and the v4-mapped forms of
// v4Checks' addresses, else to other. It reads the context from R6.
func v6Checks(other string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, offUserIP6, asm.Word),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.LoadMem(asm.R2, asm.R6, offUserIP6+4, asm.Word),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.LoadMem(asm.R2, asm.R6, offUserIP6+8, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, offUserIP6+12, asm.Word),
		asm.JEq.Imm32(asm.R2, ip6Mapped, "mapped"),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.JEq.Imm(asm.R3, 0, "allow"),
		asm.JEq.Imm(asm.R3, ip6One, "allow"),
		asm.Ja.Label(other),
		asm.JEq.Imm(asm.R3, 0, "allow").WithSymbol("mapped"),
		asm.And.Imm(asm.R3, 0xff),
		asm.JEq.Imm(asm.R3, loopback4, "allow"),
		asm.Ja.Label(other),
	}
}

// verdict is the block labelled sym: add one to counts[key] (this CPU's
// slot: no atomic needed) and return ret.
func verdict(sym string, key int32, ret int32, counts *ebpf.Map) asm.Instructions {
	done := sym + "_done"
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, int64(key), asm.Word).WithSymbol(sym),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, ret).WithSymbol(done),
		asm.Return(),
	}
}
