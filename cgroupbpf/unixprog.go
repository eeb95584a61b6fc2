package cgroupbpf

import (
	"fmt"
	"path"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// The unix programs (connect_unix, sendmsg_unix: 6.7+) see a unix
// socket's connect and its sends with an address. Their context has no
// field for the path: the program reaches the kernel's copy of the
// address through bpf_cast_to_kern_ctx (a kfunc, called by the BTF id
// the running kernel gives it) and copies it to its stack. Only a path
// whose last component is the last component of a resolver socket
// (HoldConfig.UnixNames: "socket", "io.systemd.Resolve") is held for user
// space, which classifies the whole path; every other unix address
// passes at once.

// unixCtx is what the unix programs need of the kernel's BTF.
type unixCtx struct {
	castToKernCtx   btf.TypeID // the kfunc bpf_cast_to_kern_ctx
	uaddr, uaddrlen int16      // struct bpf_sock_addr_kern's members
}

// readUnixCtx reads the kfunc's id and the kernel context's layout.
func readUnixCtx() (unixCtx, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return unixCtx{}, fmt.Errorf("read the kernel's BTF: %w", err)
	}
	var fn *btf.Func
	if err := spec.TypeByName("bpf_cast_to_kern_ctx", &fn); err != nil {
		return unixCtx{}, fmt.Errorf("kernel BTF: the kfunc bpf_cast_to_kern_ctx (6.2): %w", err)
	}
	id, err := spec.TypeID(fn)
	if err != nil {
		return unixCtx{}, fmt.Errorf("kernel BTF: %w", err)
	}
	var kern *btf.Struct
	if err := spec.TypeByName("bpf_sock_addr_kern", &kern); err != nil {
		return unixCtx{}, fmt.Errorf("kernel BTF: %w", err)
	}
	uaddr, err := memberOffset(kern, "uaddr")
	if err != nil {
		return unixCtx{}, err
	}
	uaddrlen, err := memberOffset(kern, "uaddrlen")
	if err != nil {
		return unixCtx{}, fmt.Errorf("%w (a unix address's length: 6.7)", err)
	}
	return unixCtx{castToKernCtx: id, uaddr: int16(uaddr), uaddrlen: int16(uaddrlen)}, nil
}

// NameHash is the hash the unix programs compute over the last
// component of a unix address (after its last '/', up to its first NUL
// past the first byte): h = h*31 + c, reset at each '/'. An abstract
// name's leading NUL adds nothing.
func NameHash(name string) uint64 {
	var h uint64
	for i := 0; i < len(name) && i < sunPathLen; i++ {
		c := name[i]
		switch {
		case c == 0 && i > 0:
			return h
		case c == '/':
			h = 0
		default:
			h = h*31 + uint64(c)
		}
	}
	return h
}

// UnixNames is the last component of each of sockets (resolver sockets
// as classify names them: a path, or "@" and an abstract name), the
// names the unix programs hold.
func UnixNames(sockets []string) []string {
	var names []string
	for _, s := range sockets {
		names = append(names, path.Base("/"+strings.TrimPrefix(s, "@")))
	}
	return names
}

// Stack slots of the unix program: its event lies below the value (the
// path at valuePath, copied there from the kernel's address).
const unixEvent = holdValue - unixEventLen

// UnixProgram builds the hold's program for attach: connect_unix or
// sendmsg_unix.
func (h *Hold) UnixProgram(attach ebpf.AttachType) (*ebpf.Program, error) {
	if h.unix == nil {
		c, err := readUnixCtx()
		if err != nil {
			return nil, err
		}
		h.unix = &c
	}
	insns := h.unixRead()
	insns = append(insns, unixScan()...)
	// "zend": the hash of the last component (R9) against the names held.
	var match asm.Instructions
	for _, name := range h.cfg.UnixNames {
		match = append(match, asm.LoadImm(asm.R1, int64(NameHash(name)), asm.DWord),
			asm.JEq.Reg(asm.R9, asm.R1, "other"))
	}
	match = append(match, asm.Ja.Label("allow"))
	match[0] = match[0].WithSymbol("zend")
	insns = append(insns, match...)
	if h.cfg.PassTGID != 0 {
		insns = append(insns,
			asm.FnGetCurrentPidTgid.Call().WithSymbol("other"),
			asm.RSh.Imm(asm.R0, 32),
			asm.JEq.Imm(asm.R0, int32(h.cfg.PassTGID), "allow"),
			asm.Ja.Label("held"))
	} else {
		insns = append(insns, asm.Ja.Label("held").WithSymbol("other"))
	}
	insns = append(insns, h.unixBody()...)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nettrap_unix", Type: ebpf.CGroupSockAddr,
		AttachType: attach, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the unix hold program for %s: %w", attach, err)
	}
	return p, nil
}

// unixRead copies the kernel's copy of the address to the value's path
// (its family just before) and puts the path's length (the address's
// less the family) in R8; the context stays in R6.
func (h *Hold) unixRead() asm.Instructions {
	kfunc := asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src: asm.PseudoKfuncCall, Constant: int64(h.unix.castToKernCtx)}
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		kfunc,
		asm.LoadMem(asm.R3, asm.R0, h.unix.uaddr, asm.DWord),
		asm.LoadMem(asm.R8, asm.R0, h.unix.uaddrlen, asm.Word),
		asm.StoreMem(asm.RFP, unixEvent+heldEventLen+sunPathLen, asm.R8, asm.Word),
		asm.Sub.Imm(asm.R8, 2),
		asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, holdValue+valuePath-2),
		asm.Mov.Imm(asm.R2, sunPathLen+2),
		asm.FnProbeReadKernel.Call(),
		asm.JEq.Imm(asm.R0, 0, "u0"),
		// Unreadable (never seen): refused, never passed unread.
		asm.Mov.Imm(asm.R1, -int32(unix.EFAULT)), asm.FnSetRetval.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
	}
}

// unixScan hashes the path's last component into R9 (NameHash) and
// zeroes the path past its length, so that the same address compares
// equal however the bytes past it were left; then it goes to "zend".
// Unrolled: each byte is a constant offset on the stack.
func unixScan() asm.Instructions {
	p := func(i int) int16 { return holdValue + valuePath + int16(i) }
	insns := asm.Instructions{asm.Mov.Imm(asm.R9, 0).WithSymbol("u0")}
	for i := range sunPathLen {
		step := asm.Instructions{asm.JSLE.Imm(asm.R8, int32(i), fmt.Sprintf("z%d", i)),
			asm.LoadMem(asm.R1, asm.RFP, p(i), asm.Byte)}
		if i > 0 {
			// Past a NUL only the zeroing from the length is left.
			step = append(step, asm.JEq.Imm(asm.R1, 0, fmt.Sprintf("n%d", i+1)))
		}
		next := fmt.Sprintf("u%d", i+1)
		step = append(step,
			asm.JNE.Imm(asm.R1, '/', fmt.Sprintf("h%d", i)),
			asm.Mov.Imm(asm.R9, 0), asm.Ja.Label(next),
			asm.Mul.Imm(asm.R9, 31).WithSymbol(fmt.Sprintf("h%d", i)),
			asm.Add.Reg(asm.R9, asm.R1))
		if i > 0 {
			step[0] = step[0].WithSymbol(fmt.Sprintf("u%d", i))
		}
		insns = append(insns, step...)
	}
	insns = append(insns, asm.Ja.Label("zend").WithSymbol(fmt.Sprintf("u%d", sunPathLen)))
	for i := 2; i <= sunPathLen; i++ { // a NUL at byte i-1 comes to n(i)
		insns = append(insns, asm.JSLE.Imm(asm.R8, int32(i), fmt.Sprintf("z%d", i)).WithSymbol(fmt.Sprintf("n%d", i)))
	}
	insns = append(insns, asm.Ja.Label("zend"))
	for i := range sunPathLen {
		insns = append(insns, asm.StoreImm(asm.RFP, p(i), 0, asm.Byte).WithSymbol(fmt.Sprintf("z%d", i)))
	}
	return append(insns, asm.Ja.Label("zend").WithSymbol(fmt.Sprintf("z%d", sunPathLen)))
}

// unixBody is the unix program from "held" on: a verdict applies to the
// same path on the same socket (R9 its cookie).
func (h *Hold) unixBody() asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("held"), asm.FnGetSocketCookie.Call(), asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnGetCurrentPidTgid.Call(), asm.StoreMem(asm.RFP, holdKey, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, h.verdicts.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, holdKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new"),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord), asm.JNE.Reg(asm.R1, asm.R9, "new"),
	}
	for off := int16(valuePath); off < valuePath+sunPathLen; off += 4 {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R0, off, asm.Word),
			asm.LoadMem(asm.R2, asm.RFP, holdValue+off, asm.Word), asm.JNE.Reg(asm.R1, asm.R2, "new"))
	}
	insns = append(insns,
		asm.LoadMem(asm.R7, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R7, int32(heldPending), "pending"),
		// A redirect is an inet verdict: refused here.
		asm.JNE.Imm(asm.R7, int32(heldAllow), "deny"),
	)
	insns = append(insns, h.forget("")...)
	insns = append(insns, asm.Ja.Label("allow"))
	insns = append(insns, h.pending()...)
	insns = append(insns, h.unixReport()...)
	return append(insns, h.holdTail()...)
}

// unixReport is the unix program's block for a new call: its value and
// an event with its path, as report writes an inet call's.
func (h *Hold) unixReport() asm.Instructions {
	ev := int16(unixEvent)
	insns := asm.Instructions{
		asm.FnKtimeGetNs.Call().WithSymbol("new"),
		asm.StoreMem(asm.RFP, holdValue+16, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, holdValue, int64(heldPending), asm.Word),
		asm.StoreImm(asm.RFP, holdValue+4, 0, asm.Word),
		asm.StoreMem(asm.RFP, holdValue+8, asm.R9, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
	}
	for off := int16(24); off < valuePath; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, holdValue+off, asm.R1, asm.DWord))
	}
	insns = append(insns, asm.StoreMem(asm.RFP, holdValue+valuePath+sunPathLen, asm.R1, asm.Word))
	for off := int16(24); off < 40; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, ev+off, asm.R1, asm.DWord))
	}
	for off := int16(0); off < sunPathLen; off += 4 {
		insns = append(insns, asm.LoadMem(asm.R1, asm.RFP, holdValue+valuePath+off, asm.Word),
			asm.StoreMem(asm.RFP, ev+heldEventLen+off, asm.R1, asm.Word))
	}
	insns = append(insns,
		asm.StoreImm(asm.RFP, ev+8, 0, asm.Word),
		asm.StoreImm(asm.RFP, ev+12, unix.AF_UNIX, asm.Word),
		asm.StoreMem(asm.RFP, ev+16, asm.R9, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, offType, asm.Word), asm.StoreMem(asm.RFP, ev+80, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, offProtocol, asm.Word), asm.StoreMem(asm.RFP, ev+84, asm.R1, asm.Word),
		asm.StoreImm(asm.RFP, ev+96, 0, asm.Word), asm.StoreImm(asm.RFP, ev+100, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetNetnsCookie.Call(),
		asm.StoreMem(asm.RFP, ev+72, asm.R0, asm.DWord),
	)
	insns = append(insns, h.enter(ev)...)
	return append(insns, h.output(ev, unixEventLen)...)
}
