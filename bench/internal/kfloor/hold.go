package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// The hold (issue 39's open question, answered on kernels whose cgroup
// programs may call bpf_send_signal_thread: 6.18 here, not Debian's
// 6.12): a cgroup sock_addr program cannot sleep, but it can refuse the
// call with -ERESTARTNOINTR (bpf_set_retval, 5.18) and raise SIGURG on
// the calling thread. On its way out the thread takes the signal (Go's
// runtime ignores a stray SIGURG, its own preemption signal; a C
// program's default ignores it) and the kernel restarts the call, which
// meets the program again, with the address copied again from the
// caller and the socket looked up again. Until user space writes a
// verdict the call loops there; the program then applies the verdict to
// the very destination and socket it was given for, on the kernel's own
// copy: a destination or descriptor changed between tries is a new call,
// held again and reported again.
//
// holdProgram is that program for connect and UDP sendmsg, IPv4 and
// IPv6: loopback and unspecified destinations pass, every other is held,
// reported on events once per destination and decided by the verdicts
// map.

// heldKey is the verdicts map's key, the caller's pid_tgid; heldValue
// is its value, heldEvent what events carries (both little-endian, laid
// out as the program writes them).
const (
	heldValueLen   = 64  // u32 verdict, u32 port, u64 socket cookie, u64 held since (ns), ip[16], u32 errno, u32 new port, new ip[16]
	heldEventLen   = 72  // u64 pid_tgid, u32 port, u32 family, u64 socket cookie, ip[16], u64 pc, sp, fp, lr
	erestartNoIntr = 513 // include/linux/errno.h: restart whatever SA_RESTART says
)

// Verdicts user space writes (heldPending until then).
const (
	heldPending uint32 = iota
	heldAllow
	heldDeny
	heldRedirect
)

// Verdict is user space's answer to a held call: let it through, refuse
// it with an errno, or let it through to another destination (nettrap's
// deny-and-redirect, the DNS sinkhole's).
type Verdict struct {
	kind     uint32
	errno    unix.Errno
	redirect netip.AddrPort
}

// Allow lets the call through.
func Allow() Verdict { return Verdict{kind: heldAllow} }

// Deny refuses the call with errno.
func Deny(errno unix.Errno) Verdict { return Verdict{kind: heldDeny, errno: errno} }

// RedirectTo lets the call through to to instead, an address of the
// call's family.
func RedirectTo(to netip.AddrPort) Verdict { return Verdict{kind: heldRedirect, redirect: to} }

// Held is one held call, as events reports it.
type Held struct {
	TID, PID int
	Dest     netip.AddrPort
	Cookie   uint64 // the socket's (bpf_get_socket_cookie)
	// PC, SP, FP and LR are the caller's user registers in its call
	// (bpf_task_pt_regs): where nettrap's unwinder starts, on a stack
	// that cannot change while the call is held. LR is arm64's.
	PC, SP, FP, LR uint64
	key            uint64
}

// holder is the maps and the program of the hold.
type holder struct {
	verdicts, events *ebpf.Map
	// stop holds with SIGSTOP instead of SIGURG: the whole process
	// stops at the call's first try, and serve continues it (SIGCONT)
	// once the verdict is written. For programs that do not handle
	// SIGURG: the kernel discards a signal whose action is to be
	// ignored, SIGURG's default, and the call then fails with errno 513
	// instead of restarting.
	stop bool
}

func newHolder() (*holder, error) {
	v, err := ebpf.NewMap(&ebpf.MapSpec{Name: "kfloor_verdicts", Type: ebpf.Hash,
		KeySize: 8, ValueSize: heldValueLen, MaxEntries: 4096})
	if err != nil {
		return nil, fmt.Errorf("make the verdicts' map: %w", err)
	}
	e, err := ebpf.NewMap(&ebpf.MapSpec{Name: "kfloor_events", Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("make the events' ring buffer: %w", err)
	}
	return &holder{verdicts: v, events: e}, nil
}

func (h *holder) close() {
	h.verdicts.Close()
	h.events.Close()
}

// signal is what the program raises on a held caller.
func (h *holder) signal() unix.Signal {
	if h.stop {
		return unix.SIGSTOP
	}
	return unix.SIGURG
}

// decide writes verdict for c: applied at c's next try if it still names
// the same destination on the same socket.
func (h *holder) decide(c Held, verdict Verdict) error {
	v := make([]byte, heldValueLen)
	binary.LittleEndian.PutUint32(v[0:], verdict.kind)
	binary.BigEndian.PutUint16(v[4:], c.Dest.Port())
	binary.LittleEndian.PutUint64(v[8:], c.Cookie)
	copy(v[24:40], heldIP(c.Dest.Addr()))
	binary.LittleEndian.PutUint32(v[40:], uint32(verdict.errno))
	if verdict.kind == heldRedirect {
		binary.BigEndian.PutUint16(v[44:], verdict.redirect.Port())
		copy(v[48:64], heldIP(verdict.redirect.Addr()))
	}
	return h.verdicts.Update(c.key, v, ebpf.UpdateAny)
}

// heldIP is an address as the program keeps it: an IPv6 address's 16
// bytes, an IPv4 address's 4 followed by zeros.
func heldIP(a netip.Addr) []byte {
	ip := make([]byte, 16)
	if a.Is4() {
		b := a.As4()
		copy(ip, b[:])
	} else {
		b := a.As16()
		copy(ip, b[:])
	}
	return ip
}

// serve reads h's events from rd and writes decide's verdict for each
// (none where answer is false), until rd is closed.
func (h *holder) serve(rd *ringbuf.Reader, decide func(Held) (v Verdict, answer bool)) error {
	for {
		rec, err := rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		c, err := parseHeld(rec.RawSample)
		if err != nil {
			return err
		}
		v, answer := decide(c)
		if !answer {
			continue
		}
		if err := h.decide(c, v); err != nil {
			return fmt.Errorf("write the verdict: %w", err)
		}
		if h.stop {
			if err := continueStopped(c.PID); err != nil {
				return err
			}
		}
	}
}

// continueStopped sends SIGCONT to pid once it has stopped: a SIGCONT
// that came first would cancel the pending SIGSTOP, and with it the
// restart of the held call.
func continueStopped(pid int) error {
	for i := 0; i < 1000 && !procfs.Stopped(pid); i++ {
		time.Sleep(50 * time.Microsecond)
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil && err != unix.ESRCH {
		return os.NewSyscallError("kill(SIGCONT)", err)
	}
	return nil
}

func parseHeld(b []byte) (Held, error) {
	if len(b) < heldEventLen {
		return Held{}, fmt.Errorf("short event (%d bytes)", len(b))
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	key := u64(0)
	port := binary.BigEndian.Uint16(b[8:10])
	ip := netip.AddrFrom16([16]byte(b[24:40]))
	if binary.LittleEndian.Uint32(b[12:]) == 4 {
		ip = netip.AddrFrom4([4]byte(b[24:28]))
	}
	return Held{TID: int(uint32(key)), PID: int(key >> 32), Dest: netip.AddrPortFrom(ip, port),
		Cookie: u64(16), PC: u64(40), SP: u64(48), FP: u64(56), LR: u64(64), key: key}, nil
}

// holdProgram builds the program for attach (connect4/6 or sendmsg4/6;
// v6 for the IPv6 ones). A call held longer than deadline with no
// verdict fails with EPERM: the hold fails closed, and never hangs its
// caller, when no one answers.
func (h *holder) holdProgram(attach ebpf.AttachType, v6 bool, deadline time.Duration) (*ebpf.Program, error) {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	if v6 {
		insns = append(insns, v6Checks("held")...)
	} else {
		insns = append(insns, v4Checks("held")...)
	}
	insns = append(insns, h.holdBody(v6, deadline)...)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "kfloor_hold", Type: ebpf.CGroupSockAddr,
		AttachType: attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the hold program for %s: %w", attach, err)
	}
	return p, nil
}

// forget deletes the caller's entry from the verdicts map (labelled sym
// when sym is not empty): a verdict is used once.
func (h *holder) forget(sym string) asm.Instructions {
	first := asm.LoadMapPtr(asm.R1, h.verdicts.FD())
	if sym != "" {
		first = first.WithSymbol(sym)
	}
	return asm.Instructions{first, asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.FnMapDeleteElem.Call()}
}

// Stack slots of the hold program: the map key, a value it writes, an
// event it reports.
const holdKey, holdValue, holdEvent = -8, -72, -144

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
func (h *holder) holdBody(v6 bool, deadline time.Duration) asm.Instructions {
	family := int64(4)
	if v6 {
		family = 6
	}
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
	insns = append(insns,
		asm.Ja.Label("allow"),
		// Pending: past the deadline, the call fails closed.
		asm.Mov.Reg(asm.R7, asm.R0).WithSymbol("pending"),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R7, 16, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R1, deadline.Nanoseconds(), asm.DWord),
		asm.JLE.Reg(asm.R0, asm.R1, "hold"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
		asm.Ja.Label("refuse"),
		// Denied: with the verdict's errno, EPERM when it names none.
		asm.LoadMem(asm.R8, asm.R0, 40, asm.Word).WithSymbol("deny"),
		asm.JNE.Imm(asm.R8, 0, "refuse"),
		asm.Mov.Imm(asm.R8, int32(unix.EPERM)),
	)
	insns = append(insns, h.forget("refuse")...)
	insns = append(insns,
		asm.Mov.Imm(asm.R1, 0), asm.Sub.Reg(asm.R1, asm.R8), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		// Redirected: the kernel's copy of the destination rewritten,
		// then let through.
		asm.LoadMem(asm.R1, asm.R0, 44, asm.Word).WithSymbol("redirect"),
		asm.StoreMem(asm.R6, offUserPort, asm.R1, asm.Word),
	)
	if v6 {
		for w := int16(0); w < 4; w++ {
			insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 48+4*w, asm.Word),
				asm.StoreMem(asm.R6, offUserIP6+4*w, asm.R1, asm.Word))
		}
	} else {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, 48, asm.Word),
			asm.StoreMem(asm.R6, offUserIP4, asm.R1, asm.Word))
	}
	insns = append(insns, h.forget("")...)
	insns = append(insns,
		asm.Ja.Label("allow"),
		// A new call (or a changed one): pending since now, and reported.
		asm.FnKtimeGetNs.Call().WithSymbol("new"),
		asm.StoreMem(asm.RFP, holdValue+16, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, holdValue, int64(heldPending), asm.Word),
		asm.StoreMem(asm.RFP, holdValue+4, asm.R8, asm.Word),
		asm.StoreMem(asm.RFP, holdValue+8, asm.R9, asm.DWord),
		// No errno, no new port, no new address (cilium/ebpf's asm has
		// no 8-byte store of an immediate).
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, holdValue+40, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, holdValue+48, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, holdValue+56, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, holdEvent+8, asm.R8, asm.Word),
		asm.StoreImm(asm.RFP, holdEvent+12, family, asm.Word),
		asm.StoreMem(asm.RFP, holdEvent+16, asm.R9, asm.DWord),
	)
	for w := int16(0); w < 4; w++ {
		insns = append(insns, ipWord(asm.R1, w, v6),
			asm.StoreMem(asm.RFP, holdValue+24+4*w, asm.R1, asm.Word),
			asm.StoreMem(asm.RFP, holdEvent+24+4*w, asm.R1, asm.Word))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, holdValue), asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.LoadMem(asm.R1, asm.RFP, holdKey, asm.DWord), asm.StoreMem(asm.RFP, holdEvent, asm.R1, asm.DWord),
		// The caller's registers, for the unwinder.
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0), asm.FnTaskPtRegs.Call(),
		asm.LoadMem(asm.R1, asm.R0, ptRegsPC, asm.DWord), asm.StoreMem(asm.RFP, holdEvent+40, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsSP, asm.DWord), asm.StoreMem(asm.RFP, holdEvent+48, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsFP, asm.DWord), asm.StoreMem(asm.RFP, holdEvent+56, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsLR, asm.DWord), asm.StoreMem(asm.RFP, holdEvent+64, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.events.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdEvent),
		asm.Mov.Imm(asm.R3, heldEventLen), asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		// Held: refuse with a restart and raise the signal that takes the
		// thread out and back into the call.
		asm.Mov.Imm(asm.R1, -erestartNoIntr).WithSymbol("hold"), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R1, int32(h.signal())), asm.FnSendSignalThread.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"), asm.Return(),
	)
	return insns
}
