package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
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
// holdProgram is that program for IPv4 connect and UDP sendmsg: loopback
// and 0.0.0.0 pass, every other destination is held, reported on events
// once per destination and decided by the verdicts map.

// heldKey is the verdicts map's key, the caller's pid_tgid; heldValue
// is its value, heldEvent what events carries (both little-endian, laid
// out as the program writes them).
const (
	heldValueLen   = 32  // u32 verdict, u32 ip, u32 port, u32 pad, u64 socket cookie, u64 held since (ns)
	heldEventLen   = 56  // u64 pid_tgid, u32 ip, u32 port, u64 socket cookie, u64 pc, sp, fp, lr
	erestartNoIntr = 513 // include/linux/errno.h: restart whatever SA_RESTART says
)

// Verdicts user space writes (heldPending until then).
const (
	heldPending uint32 = iota
	heldAllow
	heldDeny
)

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

// decide writes verdict for c: applied at c's next try if it still names
// the same destination on the same socket.
func (h *holder) decide(c Held, allow bool) error {
	v := make([]byte, heldValueLen)
	verdict := heldDeny
	if allow {
		verdict = heldAllow
	}
	binary.LittleEndian.PutUint32(v[0:], verdict)
	ip := c.Dest.Addr().As4()
	copy(v[4:8], ip[:])
	binary.BigEndian.PutUint16(v[8:], c.Dest.Port())
	binary.LittleEndian.PutUint64(v[16:], c.Cookie)
	return h.verdicts.Update(c.key, v, ebpf.UpdateAny)
}

// serve reads h's events from rd and writes decide's verdict for each
// (none where answer is false), until rd is closed.
func (h *holder) serve(rd *ringbuf.Reader, decide func(Held) (allow, answer bool)) error {
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
		allow, answer := decide(c)
		if !answer {
			continue
		}
		if err := h.decide(c, allow); err != nil {
			return fmt.Errorf("write the verdict: %w", err)
		}
	}
}

func parseHeld(b []byte) (Held, error) {
	if len(b) < heldEventLen {
		return Held{}, fmt.Errorf("short event (%d bytes)", len(b))
	}
	key := binary.LittleEndian.Uint64(b[0:])
	ip := netip.AddrFrom4([4]byte(b[8:12]))
	port := binary.BigEndian.Uint16(b[12:14])
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	return Held{TID: int(uint32(key)), PID: int(key >> 32), Dest: netip.AddrPortFrom(ip, port),
		Cookie: u64(16), PC: u64(24), SP: u64(32), FP: u64(40), LR: u64(48), key: key}, nil
}

// holdProgram builds the program for attach (connect4 or sendmsg4). A
// call held longer than deadline with no verdict fails with EPERM: the
// hold fails closed, and never hangs its caller, when no one answers.
func (h *holder) holdProgram(attach ebpf.AttachType, deadline time.Duration) (*ebpf.Program, error) {
	const key, value, event = -8, -40, -96 // stack slots
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, offUserIP4, asm.Word),
		asm.JEq.Imm(asm.R7, 0, "allow"),
		asm.Mov.Reg(asm.R2, asm.R7), asm.And.Imm(asm.R2, 0xff),
		asm.JEq.Imm(asm.R2, loopback4, "allow"),
		asm.LoadMem(asm.R8, asm.R6, offUserPort, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetSocketCookie.Call(), asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnGetCurrentPidTgid.Call(), asm.StoreMem(asm.RFP, key, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new"),
		// A verdict applies to the destination and socket it was given for.
		asm.LoadMem(asm.R1, asm.R0, 4, asm.Word), asm.JNE.Reg(asm.R1, asm.R7, "new"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.Word), asm.JNE.Reg(asm.R1, asm.R8, "new"),
		asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord), asm.JNE.Reg(asm.R1, asm.R9, "new"),
		asm.LoadMem(asm.R7, asm.R0, 0, asm.Word),
		asm.JNE.Imm(asm.R7, int32(heldPending), "decided"),
		// Pending: past the deadline, the call fails closed.
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R8, 24, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R1, deadline.Nanoseconds(), asm.DWord),
		asm.JLE.Reg(asm.R0, asm.R1, "hold"),
		asm.Mov.Imm(asm.R7, int32(heldDeny)),
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()).WithSymbol("decided"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, key),
		asm.FnMapDeleteElem.Call(),
		asm.JEq.Imm(asm.R7, int32(heldAllow), "allow"),
		asm.Mov.Imm(asm.R1, -int32(unix.EPERM)), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		// A new call (or a changed one): pending since now, and reported.
		asm.FnKtimeGetNs.Call().WithSymbol("new"),
		asm.StoreMem(asm.RFP, value+24, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, value, int64(heldPending), asm.Word),
		asm.StoreMem(asm.RFP, value+4, asm.R7, asm.Word),
		asm.StoreMem(asm.RFP, value+8, asm.R8, asm.Word),
		asm.StoreImm(asm.RFP, value+12, 0, asm.Word),
		asm.StoreMem(asm.RFP, value+16, asm.R9, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, value), asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.LoadMem(asm.R1, asm.RFP, key, asm.DWord), asm.StoreMem(asm.RFP, event, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, event+8, asm.R7, asm.Word),
		asm.StoreMem(asm.RFP, event+12, asm.R8, asm.Word),
		asm.StoreMem(asm.RFP, event+16, asm.R9, asm.DWord),
		// The caller's registers, for the unwinder.
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0), asm.FnTaskPtRegs.Call(),
		asm.LoadMem(asm.R1, asm.R0, ptRegsPC, asm.DWord), asm.StoreMem(asm.RFP, event+24, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsSP, asm.DWord), asm.StoreMem(asm.RFP, event+32, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsFP, asm.DWord), asm.StoreMem(asm.RFP, event+40, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, ptRegsLR, asm.DWord), asm.StoreMem(asm.RFP, event+48, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.events.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, event),
		asm.Mov.Imm(asm.R3, heldEventLen), asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		// Held: refuse with a restart and raise the signal that takes the
		// thread out and back into the call.
		asm.Mov.Imm(asm.R1, -erestartNoIntr).WithSymbol("hold"), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R1, int32(unix.SIGURG)), asm.FnSendSignalThread.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"), asm.Return(),
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "kfloor_hold", Type: ebpf.CGroupSockAddr,
		AttachType: attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the hold program for %s: %w", attach, err)
	}
	return p, nil
}
