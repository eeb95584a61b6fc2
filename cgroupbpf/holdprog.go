package cgroupbpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Program builds the hold's program for attach: connect4/6 or
// sendmsg4/6. Loopback (and what h's config passes) goes through at once;
// every other destination is held, reported on the events once per
// destination and decided by the verdicts map.
func (h *Hold) Program(attach ebpf.AttachType) (*ebpf.Program, error) {
	v6 := attach == ebpf.AttachCGroupInet6Connect || attach == ebpf.AttachCGroupUDP6Sendmsg
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	// Loopback first: the fast path calls no helper.
	insns = append(insns, LoopbackChecks(v6, h.cfg.Unspecified, h.cfg.DNS, "other")...)
	first := asm.Ja.Label("held").WithSymbol("other")
	if h.cfg.PassTGID != 0 {
		insns = append(insns,
			asm.FnGetCurrentPidTgid.Call().WithSymbol("other"),
			asm.RSh.Imm(asm.R0, 32),
			asm.JEq.Imm(asm.R0, int32(h.cfg.PassTGID), "allow"))
	} else {
		insns = append(insns, first)
	}
	connect := attach == ebpf.AttachCGroupInet4Connect || attach == ebpf.AttachCGroupInet6Connect
	insns = append(insns, h.holdBody(v6, connect)...)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nettrap_hold", Type: ebpf.CGroupSockAddr,
		AttachType: attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the hold program for %s: %w", attach, err)
	}
	return p, nil
}

// forget deletes the caller's entry from the verdicts map (labelled sym
// when sym is not empty): a verdict is used once.
func (h *Hold) forget(sym string) asm.Instructions {
	first := asm.LoadMapPtr(asm.R1, h.verdicts.FD())
	if sym != "" {
		first = first.WithSymbol(sym)
	}
	return asm.Instructions{first, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.FnMapDeleteElem.Call()}
}

// Stack slots of the hold program: the map key, a value it writes, an
// event it reports.
const holdKey, holdValue, holdEvent = -8, -8 - heldValueLen, -8 - heldValueLen - heldEventLen

// ipWord loads word w (0-3) of the destination, as heldIP lays it out,
// into dst.
func ipWord(dst asm.Register, w int16, v6 bool) asm.Instruction {
	switch {
	case v6:
		return asm.LoadMem(dst, asm.R6, offUserIP6+4*w, asm.Word)
	case w == 0:
		return asm.LoadMem(dst, asm.R6, offUserIP4, asm.Word)
	}
	return asm.Mov.Imm(dst, 0)
}

// holdBody is the program from "held" on: R6 holds the context; R8 the
// port, R9 the socket's cookie. "allow" passes the call.
func (h *Hold) holdBody(v6, connect bool) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R8, asm.R6, offUserPort, asm.Word).WithSymbol("held"),
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetSocketCookie.Call(), asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnGetCurrentPidTgid.Call(), asm.StoreMem(asm.RFP, holdKey, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new"),
		// A verdict applies to the destination and socket it was given for.
		asm.LoadMem(asm.R1, asm.R0, 4, asm.Word), asm.JNE.Reg(asm.R1, asm.R8, "new"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord), asm.JNE.Reg(asm.R1, asm.R9, "new"),
	}
	for w := int16(0); w < 4; w++ {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 24+4*w, asm.Word), ipWord(asm.R2, w, v6),
			asm.JNE.Reg(asm.R1, asm.R2, "new"))
	}
	insns = append(insns,
		asm.LoadMem(asm.R7, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R7, int32(heldPending), "pending"),
		asm.JEq.Imm(asm.R7, int32(heldDeny), "deny"),
		asm.JEq.Imm(asm.R7, int32(heldRedirect), "redirect"),
	)
	insns = append(insns, h.forget("")...)
	insns = append(insns, asm.Ja.Label("allow"))
	insns = append(insns, h.pending()...)
	insns = append(insns, h.redirect(v6, connect)...)
	insns = append(insns, h.report(v6)...)
	return append(insns, h.holdTail()...)
}

// holdTail is the end of a hold program: "hold" refuses the call with a
// restart and raises the signal that takes the thread out and back into
// the call; "allow" passes it.
func (h *Hold) holdTail() asm.Instructions {
	insns := asm.Instructions{asm.Mov.Imm(asm.R1, -erestartNoIntr).WithSymbol("hold"), asm.FnSetRetval.Call()}
	insns = append(insns, h.chooseSignal("raise")...)
	return append(insns,
		asm.FnSendSignalThread.Call().WithSymbol("raise"),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"), asm.Return(),
	)
}

// callerRegs writes the caller's registers (for the unwinder) and its
// system call's number into the event at ev.
func callerRegs(ev int16) asm.Instructions {
	return asm.Instructions{
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0), asm.FnTaskPtRegs.Call(),
		asm.LoadMem(asm.R1, asm.R0, ptRegsNr, asm.Word), asm.StoreMem(asm.RFP, ev+92, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R0, ptRegsPC, asm.DWord), asm.StoreMem(asm.RFP, ev+40, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsSP, asm.DWord), asm.StoreMem(asm.RFP, ev+48, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsFP, asm.DWord), asm.StoreMem(asm.RFP, ev+56, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsLR, asm.DWord), asm.StoreMem(asm.RFP, ev+64, asm.R1, asm.DWord),
	}
}

// zeroValue zeroes the value on the stack from byte from on (R1 0).
func zeroValue(from int16) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Imm(asm.R1, 0)}
	for off := from; off < heldValueLen; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, holdValue+off, asm.R1, asm.DWord))
	}
	return insns
}

// pending is the block for a call still waiting (R0 its entry): past the
// deadline it fails closed; a denied one fails with its errno.
func (h *Hold) pending() asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R7, asm.R0).WithSymbol("pending"),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R7, 16, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R1, h.cfg.Deadline.Nanoseconds(), asm.DWord),
		asm.JLE.Reg(asm.R0, asm.R1, "hold"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
		asm.Ja.Label("refuse"),
		// Denied: with the verdict's errno, EPERM when it names none.
		asm.LoadMem(asm.R8, asm.R0, 40, asm.Word).WithSymbol("deny"),
		asm.JNE.Imm(asm.R8, 0, "refuse"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
	}
	insns = append(insns, h.forget("refuse")...)
	return append(insns,
		asm.Mov.Imm(asm.R1, 0), asm.Sub.Reg(asm.R1, asm.R8), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// redirect is the block for a redirected call (R0 its entry): the
// kernel's copy of the destination rewritten, then let through. A
// connect's socket is bound first where the verdict names a source
// (bindSource).
func (h *Hold) redirect(v6, connect bool) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R0, 44, asm.Word).WithSymbol("redirect"),
		asm.StoreMem(asm.R6, offUserPort, asm.R1, asm.Word),
	}
	if v6 {
		for w := int16(0); w < 4; w++ {
			insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 48+4*w, asm.Word),
				asm.StoreMem(asm.R6, offUserIP6+4*w, asm.R1, asm.Word))
		}
	} else {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 48, asm.Word),
			asm.StoreMem(asm.R6, offUserIP4, asm.R1, asm.Word))
	}
	if connect {
		insns = append(insns, bindSource(v6)...)
	}
	insns = append(insns, h.forget("")...)
	if !connect {
		return append(insns, asm.Ja.Label("allow"))
	}
	return append(insns,
		asm.JEq.Imm(asm.R7, 0, "allow"),
		asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdEvent),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.FnBind.Call(),
		asm.JEq.Imm(asm.R0, 0, "allow"),
		// The source is taken (never seen: nettrap found it free): the
		// call is refused, not sent from another.
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
		asm.Ja.Label("refuse"))
}

// bindSource lays out on the stack (at holdEvent) the source a
// redirected connect's socket is bound to, from its verdict (R0): a
// socket with no port yet would otherwise be given one only after the
// program, and the stand-in must know where the query comes from. R7
// is the port (0: no source), R8 the address's length.
func bindSource(v6 bool) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R0, valueBindPort, asm.Word),
		asm.StoreMem(asm.RFP, holdEvent+2, asm.R7, asm.Half),
	}
	if !v6 {
		return append(insns,
			asm.StoreImm(asm.RFP, holdEvent, unix.AF_INET, asm.Half),
			asm.LoadMem(asm.R1, asm.R0, valueBindIP, asm.Word), asm.StoreMem(asm.RFP, holdEvent+4, asm.R1, asm.Word),
			asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, holdEvent+8, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R8, unix.SizeofSockaddrInet4))
	}
	insns = append(insns,
		asm.StoreImm(asm.RFP, holdEvent, unix.AF_INET6, asm.Half),
		asm.StoreImm(asm.RFP, holdEvent+4, 0, asm.Word),
		asm.StoreImm(asm.RFP, holdEvent+24, 0, asm.Word))
	for w := int16(0); w < 4; w++ {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, valueBindIP+4*w, asm.Word),
			asm.StoreMem(asm.RFP, holdEvent+8+4*w, asm.R1, asm.Word))
	}
	return append(insns, asm.Mov.Imm(asm.R8, unix.SizeofSockaddrInet6))
}

// report is the block for a new call (or a changed one): pending since
// now, and reported with what user space needs to decide it.
func (h *Hold) report(v6 bool) asm.Instructions {
	family := int64(4)
	if v6 {
		family = 6
	}
	insns := asm.Instructions{
		asm.FnKtimeGetNs.Call().WithSymbol("new"),
		asm.StoreMem(asm.RFP, holdValue+16, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, holdValue, int64(heldPending), asm.Word),
		asm.StoreMem(asm.RFP, holdValue+4, asm.R8, asm.Word),
		asm.StoreMem(asm.RFP, holdValue+8, asm.R9, asm.DWord),
	}
	// No errno, no new port, no new address, no path (cilium/ebpf's asm
	// has no 8-byte store of an immediate).
	insns = append(insns, zeroValue(40)...)
	insns = append(insns,
		asm.StoreMem(asm.RFP, holdEvent+8, asm.R8, asm.Word),
		asm.StoreImm(asm.RFP, holdEvent+12, family, asm.Word),
		asm.StoreMem(asm.RFP, holdEvent+16, asm.R9, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, offType, asm.Word), asm.StoreMem(asm.RFP, holdEvent+80, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, offProtocol, asm.Word), asm.StoreMem(asm.RFP, holdEvent+84, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetNetnsCookie.Call(),
		asm.StoreMem(asm.RFP, holdEvent+72, asm.R0, asm.DWord),
	)
	for w := int16(0); w < 4; w++ {
		insns = append(insns, ipWord(asm.R1, w, v6),
			asm.StoreMem(asm.RFP, holdValue+24+4*w, asm.R1, asm.Word),
			asm.StoreMem(asm.RFP, holdEvent+24+4*w, asm.R1, asm.Word))
	}
	insns = append(insns,
		// The socket's source, bound before a UDP send's program runs.
		asm.LoadMem(asm.R1, asm.R6, offSock, asm.DWord),
		asm.LoadMem(asm.R2, asm.R1, offSockSrcPort, asm.Word), asm.StoreMem(asm.RFP, holdEvent+96, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.R1, offSockSrcIP4, asm.Word), asm.StoreMem(asm.RFP, holdEvent+100, asm.R2, asm.Word),
	)
	insns = append(insns, h.enter(holdEvent)...)
	return append(insns, h.output(holdEvent, heldEventLen)...)
}

// enter writes the value on the stack into the verdicts map under the
// caller's key, pending, and the key and the signal the hold raises
// (for Decide to continue a stopped caller) into the event at ev.
func (h *Hold) enter(ev int16) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, holdValue), asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		// No entry (the map full): no verdict could ever be written, nor
		// the deadline kept, so the call fails closed at once.
		asm.JEq.Imm(asm.R0, 0, "entered"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
		asm.Ja.Label("refuse"),
		asm.LoadMem(asm.R1, asm.RFP, holdKey, asm.DWord).WithSymbol("entered"),
		asm.StoreMem(asm.RFP, ev, asm.R1, asm.DWord),
	}
	insns = append(insns, h.chooseSignal("chosen")...)
	return append(insns, asm.StoreMem(asm.RFP, ev+88, asm.R1, asm.Word).WithSymbol("chosen"))
}

// output completes the event at ev (size bytes) with the caller's
// registers and reports it, then holds the call. A report that did not
// fit (the ring full: no one reads) fails the call closed at once
// instead of holding it until the deadline.
func (h *Hold) output(ev int16, size int32) asm.Instructions {
	insns := callerRegs(ev)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, h.events.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, int32(ev)),
		asm.Mov.Imm(asm.R3, size), asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, "hold"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)), asm.Ja.Label("refuse"))
	return insns
}
