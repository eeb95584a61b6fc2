package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

type progCase struct {
	name string
	d    seccompData
	want uint32
}

func sock(domain, typ uint64) [6]uint64 { return [6]uint64{domain, typ} }

// casesFor lists every rule of the program for goarch, with that arch's
// syscall numbers.
func casesFor(goarch string) []progCase {
	t := targets[goarch]
	n, c := t.native, t.compat
	nat := func(name string, nr uint32, args [6]uint64, want uint32) progCase {
		return progCase{name, seccompData{nr: int32(nr), arch: n.audit, args: args}, want}
	}
	cmp := func(name string, nr uint32, want uint32) progCase {
		return progCase{name, seccompData{nr: int32(nr), arch: c.audit, args: [6]uint64{2, 3}}, want}
	}
	cmpArgs := func(name string, nr uint32, args [6]uint64, want uint32) progCase {
		return progCase{name, seccompData{nr: int32(nr), arch: c.audit, args: args}, want}
	}
	none := [6]uint64{}
	sendto := func(dest uint64) [6]uint64 { return [6]uint64{3, 0x1000, 10, 0, dest, 16} }
	cases := []progCase{
		nat("connect", n.nrOf(Connect), [6]uint64{3, 0x1000, 16}, retNotify),
		nat("connect no args", n.nrOf(Connect), none, retNotify),
		nat("sendto NULL dest", n.nrOf(SendTo), sendto(0), retAllow),
		nat("sendto dest", n.nrOf(SendTo), sendto(0x7ffc_1234_5678), retNotify),
		nat("sendto dest high half only", n.nrOf(SendTo), sendto(0x1_0000_0000), retNotify),
		nat("sendto dest low half only", n.nrOf(SendTo), sendto(0x1), retNotify),
		nat("sendmsg", n.nrOf(SendMsg), [6]uint64{3, 0x1000}, retNotify),
		nat("sendmmsg", n.nrOf(SendMMsg), [6]uint64{3, 0x1000, 2}, retNotify),
		nat("io_uring_setup", n.nrOf(IOUringSetup), [6]uint64{8, 0x1000}, retNotify),
		nat("ptrace PTRACE_ATTACH", n.nrOf(Ptrace), [6]uint64{unix.PTRACE_ATTACH, 1}, retNotify),
		nat("ptrace PTRACE_SEIZE", n.nrOf(Ptrace), [6]uint64{unix.PTRACE_SEIZE, 1}, retNotify),
		nat("ptrace PTRACE_TRACEME", n.nrOf(Ptrace), [6]uint64{unix.PTRACE_TRACEME}, retAllow),
		nat("ptrace PTRACE_PEEKDATA", n.nrOf(Ptrace), [6]uint64{unix.PTRACE_PEEKDATA, 1}, retAllow),
		nat("ptrace PTRACE_ATTACH high garbage", n.nrOf(Ptrace), [6]uint64{1<<40 | unix.PTRACE_ATTACH, 1}, retAllow),
		nat("process_vm_writev", n.nrOf(ProcessVMWritev), none, retNotify),
		nat("setsockopt IP_OPTIONS", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IP, unix.IP_OPTIONS}, retNotify),
		nat("setsockopt IP_OPTIONS high garbage", n.nrOf(SetSockOpt), [6]uint64{3, 1<<40 | unix.IPPROTO_IP, 1<<33 | unix.IP_OPTIONS}, retNotify),
		nat("setsockopt IPV6_RTHDR", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IPV6, unix.IPV6_RTHDR}, retNotify),
		nat("setsockopt IPV6_2292RTHDR", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR}, retNotify),
		nat("setsockopt IPV6_2292PKTOPTIONS", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS}, retNotify),
		nat("setsockopt IP_TOS", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IP, unix.IP_TOS}, retAllow),
		nat("setsockopt IPV6_V6ONLY", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY}, retAllow),
		nat("setsockopt SO_REUSEADDR", n.nrOf(SetSockOpt), [6]uint64{3, unix.SOL_SOCKET, unix.SO_REUSEADDR}, retAllow),
		nat("setsockopt TCP_NODELAY", n.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_TCP, unix.TCP_NODELAY}, retAllow),
		nat("pidfd_getfd", n.nrOf(PidfdGetfd), [6]uint64{3, 4}, retNotify),
		nat("socket AF_PACKET/SOCK_DGRAM", n.nrOf(Socket), sock(unix.AF_PACKET, unix.SOCK_DGRAM), retNotify),
		nat("socket AF_PACKET/SOCK_RAW", n.nrOf(Socket), sock(unix.AF_PACKET, unix.SOCK_RAW), retNotify),
		nat("socket AF_INET/SOCK_RAW", n.nrOf(Socket), sock(unix.AF_INET, unix.SOCK_RAW), retNotify),
		nat("socket AF_INET/SOCK_RAW|NONBLOCK|CLOEXEC", n.nrOf(Socket),
			sock(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC), retNotify),
		nat("socket AF_INET6/SOCK_RAW", n.nrOf(Socket), sock(unix.AF_INET6, unix.SOCK_RAW), retNotify),
		nat("socket AF_INET/SOCK_PACKET", n.nrOf(Socket), sock(unix.AF_INET, unix.SOCK_PACKET), retNotify),
		nat("socket AF_INET/SOCK_RDM", n.nrOf(Socket), sock(unix.AF_INET, unix.SOCK_RDM), retNotify),
		// The kernel truncates domain and type to int: garbage in the
		// high halves must not hide a raw or packet socket.
		nat("socket AF_INET/SOCK_RAW high garbage", n.nrOf(Socket),
			sock(0xdead_beef_0000_0000|unix.AF_INET, 0xffff_ffff_0000_0000|unix.SOCK_RAW), retNotify),
		nat("socket AF_PACKET high garbage", n.nrOf(Socket), sock(1<<40|unix.AF_PACKET, unix.SOCK_DGRAM), retNotify),
		nat("socket AF_INET/SOCK_STREAM", n.nrOf(Socket), sock(unix.AF_INET, unix.SOCK_STREAM), retAllow),
		nat("socket AF_INET/SOCK_STREAM|NONBLOCK|CLOEXEC", n.nrOf(Socket),
			sock(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC), retAllow),
		nat("socket AF_INET/SOCK_STREAM high garbage", n.nrOf(Socket),
			sock(1<<33|unix.AF_INET, 1<<34|unix.SOCK_STREAM), retAllow),
		nat("socket AF_INET6/SOCK_DGRAM", n.nrOf(Socket), sock(unix.AF_INET6, unix.SOCK_DGRAM), retAllow),
		nat("socket AF_INET/SOCK_SEQPACKET", n.nrOf(Socket), sock(unix.AF_INET, unix.SOCK_SEQPACKET), retAllow),
		nat("socket AF_INET/SOCK_STREAM/IPPROTO_SCTP", n.nrOf(Socket), [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, retNotify),
		nat("socket AF_INET6/SOCK_SEQPACKET/IPPROTO_SCTP", n.nrOf(Socket), [6]uint64{unix.AF_INET6, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP}, retNotify),
		nat("socket AF_INET/SOCK_STREAM/IPPROTO_SCTP high garbage", n.nrOf(Socket), [6]uint64{unix.AF_INET, unix.SOCK_STREAM, 1<<35 | unix.IPPROTO_SCTP}, retNotify),
		nat("socket AF_INET/SOCK_STREAM/IPPROTO_TCP", n.nrOf(Socket), [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP}, retAllow),
		nat("socket AF_INET6/SOCK_STREAM/IPPROTO_MPTCP", n.nrOf(Socket), [6]uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, retAllow),
		nat("socket AF_NETLINK/SOCK_RAW", n.nrOf(Socket), sock(unix.AF_NETLINK, unix.SOCK_RAW), retNotify),
		nat("socket AF_XDP", n.nrOf(Socket), sock(unix.AF_XDP, unix.SOCK_RAW), retNotify),
		nat("socket AF_VSOCK/SOCK_STREAM", n.nrOf(Socket), sock(unix.AF_VSOCK, unix.SOCK_STREAM), retNotify),
		nat("socket AF_BLUETOOTH", n.nrOf(Socket), sock(unix.AF_BLUETOOTH, unix.SOCK_SEQPACKET), retNotify),
		nat("socket AF_TIPC", n.nrOf(Socket), sock(unix.AF_TIPC, unix.SOCK_RDM), retNotify),
		nat("socket AF_UNIX high garbage", n.nrOf(Socket), sock(1<<36|unix.AF_UNIX, unix.SOCK_STREAM), retAllow),
		nat("socket AF_XDP in AF_UNIX's high half", n.nrOf(Socket), sock(unix.AF_UNIX<<32|unix.AF_XDP, unix.SOCK_RAW), retNotify),
		nat("socket AF_UNIX/SOCK_STREAM", n.nrOf(Socket), sock(unix.AF_UNIX, unix.SOCK_STREAM), retAllow),
		nat("socket AF_UNIX/SOCK_DGRAM", n.nrOf(Socket), sock(unix.AF_UNIX, unix.SOCK_DGRAM), retAllow),
		cmp("compat socketcall", c.nrOf(SocketCall), retNotify),
		cmp("compat socket", c.nrOf(Socket), retNotify),
		cmp("compat connect", c.nrOf(Connect), retNotify),
		cmp("compat sendto", c.nrOf(SendTo), retNotify),
		cmp("compat sendmsg", c.nrOf(SendMsg), retNotify),
		cmp("compat sendmmsg", c.nrOf(SendMMsg), retNotify),
		cmp("compat io_uring_setup", c.nrOf(IOUringSetup), retNotify),
		cmp("compat process_vm_writev", c.nrOf(ProcessVMWritev), retNotify),
		cmp("compat pidfd_getfd", c.nrOf(PidfdGetfd), retNotify),
		cmpArgs("compat ptrace PTRACE_ATTACH", c.nrOf(Ptrace), [6]uint64{unix.PTRACE_ATTACH, 1}, retNotify),
		cmpArgs("compat ptrace PTRACE_TRACEME", c.nrOf(Ptrace), [6]uint64{unix.PTRACE_TRACEME}, retAllow),
		cmpArgs("compat setsockopt IPV6_RTHDR", c.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IPV6, unix.IPV6_RTHDR}, retNotify),
		cmpArgs("compat setsockopt IP_OPTIONS", c.nrOf(SetSockOpt), [6]uint64{3, unix.IPPROTO_IP, unix.IP_OPTIONS}, retNotify),
		cmpArgs("compat setsockopt SO_REUSEADDR", c.nrOf(SetSockOpt), [6]uint64{3, unix.SOL_SOCKET, unix.SO_REUSEADDR}, retAllow),
		cmp("compat getpid", uint32(c.names2nr("getpid")), retAllow),
		cmp("compat read", uint32(c.names2nr("read")), retAllow),
		cmp("compat write", uint32(c.names2nr("write")), retAllow),
		{"unknown arch", seccompData{nr: 1, arch: unix.AUDIT_ARCH_PPC64LE}, retKill},
		{"unknown arch zero", seccompData{nr: 0, arch: 0}, retKill},
	}
	for _, name := range ordinary {
		cases = append(cases, nat(name, uint32(n.names2nr(name)), [6]uint64{1, 2, 3}, retAllow))
	}
	if t.x32 != nil {
		x := t.x32
		x32 := func(name string, nr uint32, want uint32) progCase {
			return progCase{name, seccompData{nr: int32(nr), arch: unix.AUDIT_ARCH_X86_64}, want}
		}
		for _, tr := range x.traps {
			c := x32(fmt.Sprintf("x32 %v %#x", tr.kind, tr.nr), tr.nr, retNotify)
			c.d.args = triggering(tr.kind)
			cases = append(cases, c)
		}
		cases = append(cases,
			x32("x32 read", x32Bit|0, retAllow),
			x32("x32 getpid", x32Bit|39, retAllow),
			x32("x32 socket AF_UNIX", x32Bit|41, retNotify), // every x32 socket goes up
			// A native arch with a foreign nr that is not exactly an x32
			// number must not be mistaken for a native network call.
			x32("x86_64 nr 518 without x32 bit", 518, retAllow),
		)
	}
	return cases
}

// ordinary syscalls present under these names on both amd64 and arm64.
var ordinary = []string{"read", "write", "getpid", "clone", "futex", "openat", "close",
	"mmap", "recvfrom", "recvmsg", "bind", "listen", "accept4", "socketpair", "setsockopt",
	"getsockopt", "io_uring_enter", "execve", "exit_group", "rt_sigaction"}

func (a *abiInfo) names2nr(name string) int {
	for nr, n := range a.names {
		if n == name {
			return nr
		}
	}
	panic(fmt.Sprintf("%s has no syscall %q", a.name, name))
}

func TestProgramRules(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			vm := vmFor(t, goarch)
			for _, tc := range casesFor(goarch) {
				if got := run(t, vm, tc.d); got != tc.want {
					t.Errorf("%s (nr=%#x arch=%#x args=%#x): got %s, want %s",
						tc.name, uint32(tc.d.nr), tc.d.arch, tc.d.args, retName(got), retName(tc.want))
				}
			}
		})
	}
}

// TestOrdinaryIgnoresArgs runs every syscall number that is not
// intercepted with random arguments: the verdict must always be ALLOW.
func TestOrdinaryIgnoresArgs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			vm := vmFor(t, goarch)
			tg := targets[goarch]
			abis := []*abiInfo{tg.native, tg.compat}
			if tg.x32 != nil {
				abis = append(abis, tg.x32)
			}
			for _, a := range abis {
				trapped := map[uint32]bool{}
				for _, tr := range a.traps {
					trapped[tr.nr] = true
				}
				for i := uint32(0); i < 1024; i++ {
					nr := i | x32BitIf(a)
					if trapped[nr] {
						continue
					}
					for range 8 {
						d := seccompData{nr: int32(nr), arch: a.audit, ip: rng.Uint64()}
						for i := range d.args {
							d.args[i] = rng.Uint64()
						}
						if got := run(t, vm, d); got != retAllow {
							t.Fatalf("%s nr %d args %#x: got %s, want ALLOW", a.name, nr, d.args, retName(got))
						}
					}
				}
			}
		})
	}
}

func TestProgramUnsupportedArch(t *testing.T) {
	for _, goarch := range []string{"386", "arm", "riscv64", ""} {
		if _, err := Program(goarch); err == nil {
			t.Errorf("Program(%q) succeeded, want error", goarch)
		}
		if _, err := Assemble(goarch); err == nil {
			t.Errorf("Assemble(%q) succeeded, want error", goarch)
		}
	}
}

// TestAssembleMatchesProgram checks the raw encoding: same length, and the
// first instruction loads seccomp_data.arch (the guard comes first).
func TestAssembleMatchesProgram(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		prog, err := Program(goarch)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := Assemble(goarch)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != len(prog) {
			t.Fatalf("%s: %d raw instructions for %d", goarch, len(raw), len(prog))
		}
		ldArch := unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch}
		if raw[0] != ldArch {
			t.Errorf("%s: first instruction %+v, want %+v", goarch, raw[0], ldArch)
		}
	}
}
