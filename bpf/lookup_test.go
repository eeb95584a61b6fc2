package bpf

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

func TestLookup(t *testing.T) {
	x64, i386 := uint32(unix.AUDIT_ARCH_X86_64), uint32(unix.AUDIT_ARCH_I386)
	a64, arm := uint32(unix.AUDIT_ARCH_AARCH64), uint32(unix.AUDIT_ARCH_ARM)
	cases := []struct {
		arch uint32
		nr   int32
		want Call
	}{
		{x64, 42, Call{"connect", Connect, false, "x86_64"}},
		{x64, 44, Call{"sendto", SendTo, false, "x86_64"}},
		{x64, 46, Call{"sendmsg", SendMsg, false, "x86_64"}},
		{x64, 307, Call{"sendmmsg", SendMMsg, false, "x86_64"}},
		{x64, 41, Call{"socket", Socket, false, "x86_64"}},
		{x64, 425, Call{"io_uring_setup", IOUringSetup, false, "x86_64"}},
		{x64, 39, Call{"getpid", Other, false, "x86_64"}},
		{x64, 0, Call{"read", Other, false, "x86_64"}},
		{x64, 9999, Call{"syscall 9999", Other, false, "x86_64"}},
		{x64, x32Bit | 42, Call{"connect", Connect, true, "x32"}},
		{x64, x32Bit | 518, Call{"sendmsg", SendMsg, true, "x32"}},
		{x64, x32Bit | 46, Call{"sendmsg", SendMsg, true, "x32"}},
		{x64, x32Bit | 538, Call{"sendmmsg", SendMMsg, true, "x32"}},
		{x64, x32Bit | 0, Call{"read", Other, true, "x32"}},
		{i386, 102, Call{"socketcall", SocketCall, true, "i386"}},
		{i386, 362, Call{"connect", Connect, true, "i386"}},
		{i386, 359, Call{"socket", Socket, true, "i386"}},
		{i386, 369, Call{"sendto", SendTo, true, "i386"}},
		{i386, 370, Call{"sendmsg", SendMsg, true, "i386"}},
		{i386, 345, Call{"sendmmsg", SendMMsg, true, "i386"}},
		{i386, 425, Call{"io_uring_setup", IOUringSetup, true, "i386"}},
		{i386, 20, Call{"getpid", Other, true, "i386"}},
		{i386, 26, Call{"ptrace", Ptrace, true, "i386"}},
		{i386, 348, Call{"process_vm_writev", ProcessVMWritev, true, "i386"}},
		{i386, 438, Call{"pidfd_getfd", PidfdGetfd, true, "i386"}},
		{i386, 366, Call{"setsockopt", SetSockOpt, true, "i386"}},
		{x64, x32Bit | 541, Call{"setsockopt", SetSockOpt, true, "x32"}},
		{x64, x32Bit | 521, Call{"ptrace", Ptrace, true, "x32"}},
		{arm, 294, Call{"setsockopt", SetSockOpt, true, "arm"}},
		{arm, 377, Call{"process_vm_writev", ProcessVMWritev, true, "arm"}},
		{a64, 203, Call{"connect", Connect, false, "aarch64"}},
		{a64, 206, Call{"sendto", SendTo, false, "aarch64"}},
		{a64, 211, Call{"sendmsg", SendMsg, false, "aarch64"}},
		{a64, 269, Call{"sendmmsg", SendMMsg, false, "aarch64"}},
		{a64, 198, Call{"socket", Socket, false, "aarch64"}},
		{a64, 425, Call{"io_uring_setup", IOUringSetup, false, "aarch64"}},
		{a64, 172, Call{"getpid", Other, false, "aarch64"}},
		{arm, 283, Call{"connect", Connect, true, "arm"}},
		{arm, 102, Call{"socketcall", SocketCall, true, "arm"}},
		{arm, 289, Call{"send", Other, true, "arm"}},
		{unix.AUDIT_ARCH_PPC64LE, 42, Call{"syscall 42", Other, true, ""}},
	}
	for _, tc := range cases {
		if got := Lookup(tc.arch, tc.nr); got != tc.want {
			t.Errorf("Lookup(%#x, %#x) = %+v, want %+v", tc.arch, uint32(tc.nr), got, tc.want)
		}
	}
}

// TestTrapNumbersMatchLibraryTables cross-checks our hand-written numbers
// against go-seccomp-bpf's generated syscall tables (except arm's
// socketcall, which only the old ABI has and the library's EABI table
// leaves out).
func TestTrapNumbersMatchLibraryTables(t *testing.T) {
	for _, a := range []*abiInfo{abiX8664Info, abiX32Info, abiI386Info, abiAArch64Info, abiARMInfo} {
		for _, tr := range a.traps {
			if a == abiARMInfo && tr.kind == SocketCall {
				continue
			}
			bare := int(tr.nr &^ x32BitIf(a))
			if got := a.names[bare]; got != tr.kind.String() {
				t.Errorf("%s nr %d: library names it %q, we trap it as %v", a.name, bare, got, tr.kind)
			}
		}
	}
	if abiX8664Info.names[0] != arch.X86_64.SyscallNumbers[0] {
		t.Error("x86_64 names table is not the library's")
	}
}

// TestEveryKindTrapped: every kind the native ABI traps is trapped on
// every other ABI of the same machine too (x32 and i386 beside x86_64, arm
// beside aarch64): a kind missing from one ABI would be a way round.
func TestEveryKindTrapped(t *testing.T) {
	for goarch, tg := range targets {
		abis := []*abiInfo{tg.compat}
		if tg.x32 != nil {
			abis = append(abis, tg.x32)
		}
		for _, tr := range tg.native.traps {
			for _, a := range append(abis, tg.native) {
				if len(a.nrsOf(tr.kind)) == 0 {
					t.Errorf("%s: %s traps %v, %s does not", goarch, tg.native.name, tr.kind, a.name)
				}
			}
		}
	}
	for _, a := range []*abiInfo{abiI386Info, abiARMInfo} {
		if len(a.nrsOf(SocketCall)) == 0 {
			t.Errorf("%s does not trap socketcall", a.name)
		}
	}
}

func TestKindString(t *testing.T) {
	if Other.String() != "other" || Connect.String() != "connect" || SocketCall.String() != "socketcall" {
		t.Errorf("names: %v %v %v", Other, Connect, SocketCall)
	}
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("Kind(99) = %q", got)
	}
}
