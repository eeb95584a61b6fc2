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

// TestEveryKindTrapped makes sure each ABI traps every network kind: a
// kind missing from one ABI would be a way round.
func TestEveryKindTrapped(t *testing.T) {
	kinds := []Kind{Connect, SendTo, SendMsg, SendMMsg, Socket, IOUringSetup}
	for _, a := range []*abiInfo{abiX8664Info, abiX32Info, abiI386Info, abiAArch64Info, abiARMInfo} {
		have := map[Kind]bool{}
		for _, tr := range a.traps {
			have[tr.kind] = true
		}
		for _, k := range kinds {
			if !have[k] {
				t.Errorf("%s does not trap %v", a.name, k)
			}
		}
		if a == abiI386Info && !have[SocketCall] {
			t.Error("i386 does not trap socketcall")
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
