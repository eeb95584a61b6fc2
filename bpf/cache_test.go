package bpf

import (
	"testing"

	"golang.org/x/sys/unix"
)

// constAllow is a port of the kernel's seccomp_is_const_allow
// (kernel/seccomp.c, 5.11+): it runs the filter for one (arch, nr) knowing
// only those two values, and reports whether the verdict is ALLOW without
// touching anything else. The kernel caches exactly the syscalls for which
// this is true and then skips the filter for them.
func constAllow(prog []unix.SockFilter, arch uint32, nr uint32) bool {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			switch in.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			default:
				return false // loads an argument: not constant
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K == unix.SECCOMP_RET_ALLOW
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var res bool
			switch in.Code & 0xf0 {
			case unix.BPF_JEQ:
				res = a == in.K
			case unix.BPF_JGE:
				res = a >= in.K
			case unix.BPF_JGT:
				res = a > in.K
			case unix.BPF_JSET:
				res = a&in.K != 0
			}
			if res {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		default:
			return false // an instruction the cache cannot emulate
		}
	}
	return false
}

// TestActionCache checks that every syscall that is not intercepted gets a
// constant ALLOW from arch and nr alone (so the kernel's action cache
// serves it at full speed), and that the intercepted ones do not.
func TestActionCache(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			prog, err := Assemble(goarch)
			if err != nil {
				t.Fatal(err)
			}
			tg := targets[goarch]
			for _, a := range []*abiInfo{tg.native, tg.compat} {
				trapped := map[uint32]bool{}
				for _, tr := range a.traps {
					trapped[tr.nr] = true
				}
				for nr := uint32(0); nr < 1024; nr++ {
					if got := constAllow(prog, a.audit, nr); got == trapped[nr] {
						t.Errorf("%s nr %d: constant allow = %v, want %v", a.name, nr, got, !trapped[nr])
					}
				}
			}
		})
	}
}

// TestConstAllowEmulator makes sure the emulator can say both yes and no.
func TestConstAllowEmulator(t *testing.T) {
	allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	argLoad := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: argLo(0)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	if !constAllow(allow, unix.AUDIT_ARCH_X86_64, 0) {
		t.Error("plain ALLOW program not constant")
	}
	if constAllow(argLoad, unix.AUDIT_ARCH_X86_64, 0) {
		t.Error("argument load counted as constant")
	}
}
