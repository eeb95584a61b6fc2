package bpf

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// triggering returns arguments with which a trapped call of kind k must
// reach the supervisor on every ABI: the kinds decided by arguments get
// arguments that ask for what is checked.
func triggering(k Kind) [6]uint64 {
	switch k {
	case SetSockOpt:
		return [6]uint64{3, unix.IPPROTO_IP, unix.IP_UNICAST_IF}
	case Ptrace:
		return [6]uint64{unix.PTRACE_ATTACH, 1}
	case SendTo:
		return [6]uint64{3, 0x1000, 10, 0, 0x2000, 16}
	case Socket:
		return [6]uint64{unix.AF_PACKET, unix.SOCK_RAW}
	case Ioctl:
		return [6]uint64{3, unix.SIOCADDRT, 0x1000}
	case BPF:
		return [6]uint64{unix.BPF_PROG_ATTACH, 0x1000, 16}
	}
	return [6]uint64{3, 0x1000, 16}
}

// abiRow is one call, tried on every ABI of a target with that ABI's
// number for kind. native and foreign are the verdicts expected there: a
// foreign ABI must never be looser than the native one.
type abiRow struct {
	name            string
	kind            Kind
	args            [6]uint64
	native, foreign uint32
}

func abiRows() []abiRow {
	sso := func(level, name uint32) [6]uint64 { return [6]uint64{3, uint64(level), uint64(name), 0x1000, 4} }
	rows := []abiRow{
		{"connect", Connect, [6]uint64{3, 0x1000, 16}, retNotify, retNotify},
		{"sendto dest", SendTo, [6]uint64{3, 0x1000, 10, 0, 0x2000, 16}, retNotify, retNotify},
		// A NULL destination is let through natively; a foreign ABI is
		// not decoded, so it goes up (and is denied) whatever it names.
		{"sendto NULL", SendTo, [6]uint64{3, 0x1000, 10}, retAllow, retNotify},
		{"sendmsg", SendMsg, [6]uint64{3, 0x1000}, retNotify, retNotify},
		{"sendmmsg", SendMMsg, [6]uint64{3, 0x1000, 2}, retNotify, retNotify},
		{"io_uring_setup", IOUringSetup, [6]uint64{8, 0x1000}, retNotify, retNotify},
		{"socket AF_INET stream", Socket, [6]uint64{unix.AF_INET, unix.SOCK_STREAM}, retAllow, retNotify},
		{"socket AF_XDP", Socket, [6]uint64{unix.AF_XDP, unix.SOCK_RAW}, retNotify, retNotify},
		{"ptrace PTRACE_ATTACH", Ptrace, [6]uint64{unix.PTRACE_ATTACH, 1}, retNotify, retNotify},
		{"ptrace PTRACE_SEIZE", Ptrace, [6]uint64{unix.PTRACE_SEIZE, 1}, retNotify, retNotify},
		{"ptrace PTRACE_TRACEME", Ptrace, [6]uint64{unix.PTRACE_TRACEME}, retAllow, retAllow},
		{"ptrace PTRACE_CONT", Ptrace, [6]uint64{unix.PTRACE_CONT, 1}, retAllow, retAllow},
		{"process_vm_writev", ProcessVMWritev, [6]uint64{1, 0x1000, 1, 0x2000, 1}, retNotify, retNotify},
		{"pidfd_getfd", PidfdGetfd, [6]uint64{3, 4}, retNotify, retNotify},
		{"setsockopt SO_REUSEADDR", SetSockOpt, sso(unix.SOL_SOCKET, unix.SO_REUSEADDR), retAllow, retAllow},
		{"setsockopt TCP_NODELAY", SetSockOpt, sso(unix.IPPROTO_TCP, unix.TCP_NODELAY), retAllow, retAllow},
		{"setsockopt IP_TOS", SetSockOpt, sso(unix.IPPROTO_IP, unix.IP_TOS), retAllow, retAllow},
		{"setsockopt IP_PKTINFO (receive flag)", SetSockOpt, sso(unix.IPPROTO_IP, unix.IP_PKTINFO), retAllow, retAllow},
		{"setsockopt IPV6_RECVPKTINFO", SetSockOpt, sso(unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO), retAllow, retAllow},
		{"setsockopt IPV6_V6ONLY", SetSockOpt, sso(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY), retAllow, retAllow},
		{"setsockopt IP_MULTICAST_LOOP", SetSockOpt, sso(unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP), retAllow, retAllow},
		{"setsockopt IP_DROP_MEMBERSHIP", SetSockOpt, sso(unix.IPPROTO_IP, unix.IP_DROP_MEMBERSHIP), retAllow, retAllow},
		{"setsockopt SO_KEEPALIVE", SetSockOpt, sso(unix.SOL_SOCKET, unix.SO_KEEPALIVE), retAllow, retAllow},
		// SOL_SOCKET's number, with an IPPROTO_IP option's number: the
		// level must be compared, not only the name.
		{"setsockopt SOL_SOCKET/IP_UNICAST_IF's number", SetSockOpt, sso(unix.SOL_SOCKET, unix.IP_UNICAST_IF), retAllow, retAllow},
		{"setsockopt IPPROTO_TCP/SO_BINDTODEVICE's number", SetSockOpt, sso(unix.IPPROTO_TCP, unix.SO_BINDTODEVICE), retAllow, retAllow},
		// The kernel truncates level and optname to int.
		{"setsockopt IP_UNICAST_IF high garbage", SetSockOpt,
			[6]uint64{3, 1<<40 | unix.IPPROTO_IP, 1<<33 | unix.IP_UNICAST_IF}, retNotify, retNotify},
	}
	for _, o := range TrappedSockOpts {
		rows = append(rows, abiRow{"setsockopt " + o.Label + fmt.Sprintf(" (level %d)", o.Level),
			SetSockOpt, sso(o.Level, o.Name), retNotify, retNotify})
		if o.Last <= o.Name {
			continue
		}
		// A range: its last number goes up, its neighbours do not.
		rows = append(rows, abiRow{fmt.Sprintf("setsockopt %s last (level %d, %d)", o.Label, o.Level, o.Last),
			SetSockOpt, sso(o.Level, o.Last), retNotify, retNotify})
		for _, n := range []uint32{o.Name - 1, o.Last + 1} {
			if _, trapped := LookupSockOpt(o.Level, n); !trapped {
				rows = append(rows, abiRow{fmt.Sprintf("setsockopt level %d option %d (next to %s)", o.Level, n, o.Label),
					SetSockOpt, sso(o.Level, n), retAllow, retAllow})
			}
		}
	}
	return append(append(rows, netnsRows()...), ioctlRows()...)
}

// netnsRows: netlink sockets, and bpf(2) commands by command.
func netnsRows() []abiRow {
	bpfc := func(cmd uint64) [6]uint64 { return [6]uint64{cmd, 0x1000, 128} }
	return []abiRow{
		{"socket AF_NETLINK raw", Socket, [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retNotify, retNotify},
		{"socket AF_NETLINK dgram|CLOEXEC", Socket, [6]uint64{unix.AF_NETLINK, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER}, retNotify, retNotify},
		{"socket AF_UNIX", Socket, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retAllow, retNotify},
		{"bpf BPF_MAP_CREATE", BPF, bpfc(unix.BPF_MAP_CREATE), retAllow, retAllow},
		{"bpf BPF_PROG_LOAD", BPF, bpfc(unix.BPF_PROG_LOAD), retAllow, retAllow},
		{"bpf BPF_MAP_LOOKUP_ELEM", BPF, bpfc(unix.BPF_MAP_LOOKUP_ELEM), retAllow, retAllow},
		{"bpf BPF_PROG_DETACH", BPF, bpfc(unix.BPF_PROG_DETACH), retAllow, retAllow},
		{"bpf BPF_LINK_UPDATE", BPF, bpfc(unix.BPF_LINK_UPDATE), retAllow, retAllow},
		{"bpf BPF_PROG_ATTACH", BPF, bpfc(unix.BPF_PROG_ATTACH), retNotify, retNotify},
		{"bpf BPF_LINK_CREATE", BPF, bpfc(unix.BPF_LINK_CREATE), retNotify, retNotify},
		// cmd is an int: the high half of the register is ignored.
		{"bpf BPF_LINK_CREATE high garbage", BPF, bpfc(1<<40 | unix.BPF_LINK_CREATE), retNotify, retNotify},
		{"bpf BPF_MAP_CREATE high garbage", BPF, bpfc(1<<40 | unix.BPF_MAP_CREATE), retAllow, retAllow},
	}
}

// ioctlRows: ordinary ioctls stay in the kernel on every ABI; each
// trapped request (both ends of a range) goes up, whatever garbage the
// high half of the register holds.
func ioctlRows() []abiRow {
	ioc := func(req uint64) [6]uint64 { return [6]uint64{3, req, 0x1000} }
	rows := []abiRow{
		{"ioctl TCGETS", Ioctl, ioc(unix.TCGETS), retAllow, retAllow},
		{"ioctl FIONBIO (0x5421)", Ioctl, ioc(0x5421), retAllow, retAllow},
		{"ioctl FIONREAD (TIOCINQ)", Ioctl, ioc(unix.TIOCINQ), retAllow, retAllow},
		{"ioctl SIOCGIFINDEX", Ioctl, ioc(unix.SIOCGIFINDEX), retAllow, retAllow},
		{"ioctl SIOCGIFCONF", Ioctl, ioc(unix.SIOCGIFCONF), retAllow, retAllow},
		{"ioctl SIOCGIFFLAGS", Ioctl, ioc(unix.SIOCGIFFLAGS), retAllow, retAllow},
		{"ioctl SIOCGIFADDR", Ioctl, ioc(unix.SIOCGIFADDR), retAllow, retAllow},
		{"ioctl SIOCGIFHWADDR", Ioctl, ioc(unix.SIOCGIFHWADDR), retAllow, retAllow},
		{"ioctl SIOCATMARK", Ioctl, ioc(unix.SIOCATMARK), retAllow, retAllow},
		{"ioctl SIOCGSTAMP", Ioctl, ioc(unix.SIOCGSTAMP), retAllow, retAllow},
		{"ioctl SIOCGSKNS", Ioctl, ioc(unix.SIOCGSKNS), retAllow, retAllow},
		{"ioctl SIOCPROTOPRIVATE", Ioctl, ioc(unix.SIOCPROTOPRIVATE), retAllow, retAllow},
		{"ioctl SIOCBONDINFOQUERY", Ioctl, ioc(unix.SIOCBONDINFOQUERY), retAllow, retAllow},
		{"ioctl 0x8a00", Ioctl, ioc(0x8a00), retAllow, retAllow},
		{"ioctl 0x88ff", Ioctl, ioc(0x88ff), retAllow, retAllow},
		// Bits above the low 16 make another request number for the kernel.
		{"ioctl 0x1890b", Ioctl, ioc(0x1890b), retAllow, retAllow},
		{"ioctl SIOCADDRT high garbage", Ioctl, ioc(1<<40 | unix.SIOCADDRT), retNotify, retNotify},
	}
	for _, io := range NetnsIoctls {
		for _, req := range []uint32{io.Lo, io.Hi} {
			name, _ := LookupNetnsIoctl(uint64(req))
			rows = append(rows, abiRow{"ioctl " + name, Ioctl, ioc(uint64(req)), retNotify, retNotify})
		}
		if io.Hi+1 < 0x8a00 {
			if _, trapped := LookupNetnsIoctl(uint64(io.Hi + 1)); !trapped {
				rows = append(rows, abiRow{fmt.Sprintf("ioctl %#x (after %s)", io.Hi+1, io.Label),
					Ioctl, ioc(uint64(io.Hi + 1)), retAllow, retAllow})
			}
		}
	}
	return rows
}

// TestProgramPerABI is the VM table of every ABI: each row runs with the
// number each ABI of the target gives the kind (every number, where an
// ABI has two), and must get that ABI's verdict.
func TestProgramPerABI(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		tg := targets[goarch]
		vm := vmFor(t, goarch)
		abis := []*abiInfo{tg.native, tg.compat}
		if tg.x32 != nil {
			abis = append(abis, tg.x32)
		}
		for _, a := range abis {
			t.Run(goarch+"/"+a.name, func(t *testing.T) {
				for _, r := range abiRows() {
					want := r.native
					if a.foreign {
						want = r.foreign
					}
					nrs := a.nrsOf(r.kind)
					if len(nrs) == 0 {
						t.Errorf("%s traps no %v", a.name, r.kind)
					}
					for _, nr := range nrs {
						d := seccompData{nr: int32(nr), arch: a.audit, args: r.args}
						if got := run(t, vm, d); got != want {
							t.Errorf("%s (nr %#x, args %#x): got %s, want %s", r.name, nr, r.args, retName(got), retName(want))
						}
					}
				}
			})
		}
	}
}

// TestForeignPtraceLowWord: a 32-bit ptrace request is 32 bits; garbage a
// 64-bit process puts in the high half of the register before `int 0x80`
// must not hide an attach.
func TestForeignPtraceLowWord(t *testing.T) {
	vm := vmFor(t, "amd64")
	d := seccompData{nr: int32(abiI386Info.nrOf(Ptrace)), arch: unix.AUDIT_ARCH_I386,
		args: [6]uint64{1<<40 | unix.PTRACE_ATTACH, 1}}
	if got := run(t, vm, d); got != retNotify {
		t.Errorf("i386 ptrace(ATTACH) with high garbage: got %s, want USER_NOTIF", retName(got))
	}
}

// TestSocketFamilies: only unix, inet and inet6 are created without a
// trip to the supervisor; every other family goes up, netlink included
// (the supervisor hands over a socket without capabilities).
func TestSocketFamilies(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		vm := vmFor(t, goarch)
		n := targets[goarch].native
		for fam := uint64(0); fam < 64; fam++ {
			want := uint32(retNotify)
			switch fam {
			case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6:
				want = retAllow
			}
			for _, hi := range []uint64{0, 0xdead_beef << 32} {
				d := seccompData{nr: int32(n.nrOf(Socket)), arch: n.audit,
					args: [6]uint64{hi | fam, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}}
				if got := run(t, vm, d); got != want {
					t.Errorf("%s socket(family %d | %#x, SOCK_DGRAM): got %s, want %s", goarch, fam, hi, retName(got), retName(want))
				}
			}
		}
	}
}

// nrsOf returns every number an ABI traps as kind.
func (a *abiInfo) nrsOf(k Kind) []uint32 {
	var nrs []uint32
	for _, t := range a.traps {
		if t.kind == k {
			nrs = append(nrs, t.nr)
		}
	}
	return nrs
}
