package cgroupbpf

import "github.com/cilium/ebpf/asm"

// struct bpf_sock_addr (include/uapi/linux/bpf.h): the destination a
// connect or a send with an address names, as the kernel copied it from
// the caller, and the socket's type and protocol. The addresses are in
// network byte order; a 32-bit load on a little-endian machine (amd64,
// arm64) puts the first octet lowest.
const (
	offUserIP4  = 4  // __u32 user_ip4
	offUserIP6  = 8  // __u32 user_ip6[4]
	offUserPort = 24 // __u32 user_port (network order, in the low 16 bits)
	offType     = 32 // __u32 type (SOCK_STREAM, SOCK_DGRAM)
	offProtocol = 36 // __u32 protocol
	offSock     = 64 // struct bpf_sock *sk
	// struct bpf_sock: the source address and port (host order).
	offSockSrcIP4  = 24
	offSockSrcPort = 44
	loopback4      = 127
	ip6One         = 0x01000000 // the last word of ::1, loaded little-endian
	// ip6Mapped is the third word of ::ffff:0:0/96 loaded little-endian,
	// 0xffff0000, as the int32 a 32-bit comparison (JMP32) takes.
	ip6Mapped = -0x10000
	// port53 is port 53 as user_port holds it, loaded little-endian.
	port53 = 0x3500
)

// LoopbackChecks reads the context from R6 and jumps to "allow" for a
// loopback destination (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104), and
// with unspecified for an unspecified one (0.0.0.0, ::, ::ffff:0.0.0.0);
// to other for every other. v6 reads the IPv6 fields (connect6,
// sendmsg6), else the IPv4 one. With dns, a destination on port 53 goes
// to other whatever its address: a nameserver on loopback (127.0.0.53)
// is the DNS class, decided in user space.
func LoopbackChecks(v6, unspecified, dns bool, other string) asm.Instructions {
	var insns asm.Instructions
	if dns {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R6, offUserPort, asm.Word),
			asm.JEq.Imm(asm.R2, port53, other))
	}
	if v6 {
		return append(insns, v6Checks(unspecified, other)...)
	}
	return append(insns, v4Checks(unspecified, other)...)
}

func v4Checks(unspecified bool, other string) asm.Instructions {
	insns := asm.Instructions{asm.LoadMem(asm.R2, asm.R6, offUserIP4, asm.Word)}
	if unspecified {
		insns = append(insns, asm.JEq.Imm(asm.R2, 0, "allow"))
	}
	return append(insns,
		asm.And.Imm(asm.R2, 0xff),
		asm.JEq.Imm(asm.R2, loopback4, "allow"),
		asm.Ja.Label(other),
	)
}

func v6Checks(unspecified bool, other string) asm.Instructions {
	any := other // where :: and ::ffff:0.0.0.0 go
	if unspecified {
		any = "allow"
	}
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, offUserIP6, asm.Word),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.LoadMem(asm.R2, asm.R6, offUserIP6+4, asm.Word),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.LoadMem(asm.R2, asm.R6, offUserIP6+8, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, offUserIP6+12, asm.Word),
		asm.JEq.Imm32(asm.R2, ip6Mapped, "mapped"),
		asm.JNE.Imm(asm.R2, 0, other),
		asm.JEq.Imm(asm.R3, 0, any),
		asm.JEq.Imm(asm.R3, ip6One, "allow"),
		asm.Ja.Label(other),
		asm.JEq.Imm(asm.R3, 0, any).WithSymbol("mapped"),
		asm.And.Imm(asm.R3, 0xff),
		asm.JEq.Imm(asm.R3, loopback4, "allow"),
		asm.Ja.Label(other),
	}
}
