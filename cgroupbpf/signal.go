package cgroupbpf

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// sigState is where the kernel keeps what the hold needs to know of a
// thread's signals, read from the kernel's own BTF (its layout differs
// between builds): task_struct's blocked mask and sighand pointer, the
// offset of SIGURG's k_sigaction in sighand_struct (whose first word is
// sa_handler: SIG_DFL 0, SIG_IGN 1, else a handler).
type sigState struct {
	blocked, sighand, urgAction uint32
}

// readSigState reads the offsets from /sys/kernel/btf/vmlinux.
func readSigState() (sigState, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return sigState{}, fmt.Errorf("read the kernel's BTF: %w", err)
	}
	var task, sighand *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return sigState{}, fmt.Errorf("kernel BTF: %w", err)
	}
	if err := spec.TypeByName("sighand_struct", &sighand); err != nil {
		return sigState{}, fmt.Errorf("kernel BTF: %w", err)
	}
	var s sigState
	blocked, err := memberOffset(task, "blocked")
	if err != nil {
		return s, err
	}
	sh, err := memberOffset(task, "sighand")
	if err != nil {
		return s, err
	}
	action, err := memberOffset(sighand, "action")
	if err != nil {
		return s, err
	}
	var ka *btf.Struct
	if err := spec.TypeByName("k_sigaction", &ka); err != nil {
		return s, fmt.Errorf("kernel BTF: %w", err)
	}
	return sigState{blocked: blocked, sighand: sh, urgAction: action + uint32(unix.SIGURG-1)*ka.Size}, nil
}

// memberOffset is the byte offset of s's member name.
func memberOffset(s *btf.Struct, name string) (uint32, error) {
	for _, m := range s.Members {
		if m.Name == name {
			return uint32(m.Offset.Bytes()), nil
		}
	}
	return 0, fmt.Errorf("kernel BTF: %s has no member %s", s.Name, name)
}

// chooseSignal sets R1 to the signal the hold raises on the current
// thread, then goes to next. It uses R0-R2.
func (h *Hold) chooseSignal(next string) asm.Instructions {
	switch h.cfg.Signal {
	case SignalURG:
		return asm.Instructions{asm.Mov.Imm(asm.R1, int32(unix.SIGURG)), asm.Ja.Label(next)}
	case SignalStop:
		return asm.Instructions{asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)), asm.Ja.Label(next)}
	}
	stop := next + "_stop"
	s := h.sig
	return asm.Instructions{
		asm.FnGetCurrentTaskBtf.Call(),
		asm.LoadMem(asm.R1, asm.R0, int16(s.blocked), asm.DWord),
		asm.And.Imm(asm.R1, 1<<(unix.SIGURG-1)),
		asm.JNE.Imm(asm.R1, 0, stop),
		asm.LoadMem(asm.R1, asm.R0, int16(s.sighand), asm.DWord),
		asm.JEq.Imm(asm.R1, 0, stop),
		asm.LoadMem(asm.R2, asm.R1, int16(s.urgAction), asm.DWord),
		asm.JLE.Imm(asm.R2, 1, stop),
		asm.Mov.Imm(asm.R1, int32(unix.SIGURG)),
		asm.Ja.Label(next),
		asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)).WithSymbol(stop),
		asm.Ja.Label(next),
	}
}
