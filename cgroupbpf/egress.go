package cgroupbpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The egress backstop: a cgroup_skb egress program sees each packet
// of the cgroup's sockets as routed, after the address programs, with
// the control messages' effects applied (a source route's first hop is
// the header's destination, an IPv6 routing header is in the chain). It
// passes an IPv4 packet with no options to 127.0.0.0/8 and an IPv6
// packet to ::1 whose next header is TCP, UDP or ICMPv6 (no extension
// headers), and drops every other (the send fails with EPERM).
//
// Offsets in the network header, which a cgroup_skb program's
// bpf_skb_load_bytes counts from.
const (
	ip4VersionIHL = 0x45 // version 4, a 20-byte header: no options
	ip4Daddr      = 16
	ip6NextHdr    = 6
	ip6Daddr      = 24
	egressHdrLen  = 40 // an IPv6 header; an IPv4 one fits
)

// EgressProgram builds the backstop.
func EgressProgram() (*ebpf.Program, error) {
	const buf = -egressHdrLen // the header's copy on the stack
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		// bpf_skb_load_bytes(skb, 0, fp-40, 20): every IP packet has that.
		asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, buf),
		asm.Mov.Imm(asm.R4, 20), asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf, asm.Byte),
		asm.JEq.Imm(asm.R2, ip4VersionIHL, "v4"),
		asm.RSh.Imm(asm.R2, 4),
		asm.JEq.Imm(asm.R2, 6, "v6"),
		asm.Ja.Label("drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf+ip4Daddr, asm.Byte).WithSymbol("v4"),
		asm.JEq.Imm(asm.R2, loopback4, "pass"),
		asm.Ja.Label("drop"),
		// The rest of the IPv6 header.
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("v6"), asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, buf),
		asm.Mov.Imm(asm.R4, egressHdrLen), asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf+ip6NextHdr, asm.Byte),
		asm.JEq.Imm(asm.R2, 6, "v6dst"),  // TCP
		asm.JEq.Imm(asm.R2, 17, "v6dst"), // UDP
		asm.JEq.Imm(asm.R2, 58, "v6dst"), // ICMPv6
		asm.Ja.Label("drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf+ip6Daddr, asm.DWord).WithSymbol("v6dst"),
		asm.JNE.Imm(asm.R2, 0, "drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf+ip6Daddr+8, asm.Word),
		asm.JNE.Imm(asm.R2, 0, "drop"),
		asm.LoadMem(asm.R2, asm.RFP, buf+ip6Daddr+12, asm.Word),
		asm.JEq.Imm(asm.R2, ip6One, "pass"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("drop"), asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("pass"), asm.Return(),
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nettrap_egress", Type: ebpf.CGroupSKB,
		AttachType: ebpf.AttachCGroupInetEgress, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the egress program: %w", err)
	}
	return p, nil
}
