package main

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/nettrap/nettrap/cgroupbpf"
)

// counts' slots: allowed calls, refused ones.
const (
	allowedKey = 0
	deniedKey  = 1
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
	insns = append(insns, cgroupbpf.LoopbackChecks(h.v6, true, false, "deny")...)
	insns = append(insns, verdict("allow", allowedKey, 1, counts)...)
	insns = append(insns, verdict("deny", deniedKey, 0, counts)...)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "kfloor", Type: ebpf.CGroupSockAddr,
		AttachType: h.attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the %s program: %w", h.attach, err)
	}
	return p, nil
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
