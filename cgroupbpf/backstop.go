package cgroupbpf

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
)

// The backstop is the kernel engine's egress program: it sees each
// packet of the cgroup's sockets as routed, after the address programs,
// with what a send's control messages did applied: a source route's
// first hop is the header's destination, an IPv6 routing header is in
// the chain, a pinned interface is the packet's device. Of the starting
// network namespace's packets it passes those that leave through lo
// with no IPv4 options and no IPv6 extension headers, and those of a
// socket allowed to reach the packet's destination (Allow: the verdicts
// that let a send or a connect through to another host); a packet of a
// namespace the tree made passes (it cannot leave the tree's
// namespaces). Every other packet is dropped (its send fails with EPERM)
// and reported.
//
// __sk_buff (include/uapi/linux/bpf.h) and the headers' offsets.
const (
	offSkbIfindex   = 40 // __u32 ifindex: the device the packet leaves by
	loIfindex       = 1  // lo's, in every namespace (LOOPBACK_IFINDEX)
	backstopKeyLen  = 24 // u64 socket cookie, daddr[16] (an IPv4 one in the first 4)
	droppedEventLen = 48 // u64 pid_tgid, u64 socket cookie, daddr[16], u32 family, u32 why, u32 ifindex, pad
)

// Why a packet was dropped.
const (
	DropOptions   = 1 // IPv4 options or IPv6 extension headers: a source route, among others
	DropInterface = 2 // it leaves by a device other than lo, to no destination allowed on its socket
)

// Backstop is the egress program's maps.
type Backstop struct {
	netns          uint64
	allowed, drops *ebpf.Map
}

// Dropped is one packet the backstop dropped.
type Dropped struct {
	PID, TID int // the task that sent it, when it was sent from a task's call
	Cookie   uint64
	Dest     netip.Addr
	Why      int
	Ifindex  int // the device it would have left by
}

// NewBackstop makes the maps for a command that starts in the network
// namespace whose cookie is netns.
func NewBackstop(netns uint64) (*Backstop, error) {
	a, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nettrap_out", Type: ebpf.Hash,
		KeySize: backstopKeyLen, ValueSize: 1, MaxEntries: 1 << 14})
	if err != nil {
		return nil, fmt.Errorf("make the backstop's map: %w", err)
	}
	d, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nettrap_drops", Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("make the backstop's ring buffer: %w", err)
	}
	return &Backstop{netns: netns, allowed: a, drops: d}, nil
}

// Close releases the maps.
func (b *Backstop) Close() {
	b.allowed.Close()
	b.drops.Close()
}

// Allow lets the socket whose cookie is cookie send to dest through
// any device (a v4-mapped dest is its IPv4 address).
func (b *Backstop) Allow(cookie uint64, dest netip.Addr) error {
	key := make([]byte, backstopKeyLen)
	binary.LittleEndian.PutUint64(key, cookie)
	copy(key[8:], heldIP(dest.Unmap()))
	if err := b.allowed.Update(key, []byte{1}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("allow %v out: %w", dest, err)
	}
	return nil
}

// Reader reads the dropped packets.
func (b *Backstop) Reader() (*ringbuf.Reader, error) {
	rd, err := ringbuf.NewReader(b.drops)
	if err != nil {
		return nil, fmt.Errorf("read the backstop's drops: %w", err)
	}
	return rd, nil
}

// ParseDropped reads one report of the backstop.
func ParseDropped(p []byte) (Dropped, error) {
	if len(p) < droppedEventLen {
		return Dropped{}, fmt.Errorf("short report (%d bytes)", len(p))
	}
	key := binary.LittleEndian.Uint64(p)
	d := Dropped{TID: int(uint32(key)), PID: int(key >> 32), Cookie: binary.LittleEndian.Uint64(p[8:]),
		Why: int(binary.LittleEndian.Uint32(p[36:])), Ifindex: int(binary.LittleEndian.Uint32(p[40:]))}
	if binary.LittleEndian.Uint32(p[32:]) == 4 {
		d.Dest = netip.AddrFrom4([4]byte(p[16:20]))
	} else {
		d.Dest = netip.AddrFrom16([16]byte(p[16:32]))
	}
	return d, nil
}

// Stack slots of the backstop: the header's copy, the map key, a report.
const (
	bsHeader = -egressHdrLen
	bsKey    = bsHeader - backstopKeyLen
	bsReport = bsKey - droppedEventLen
)

// Program builds the backstop. Its fast path, a packet through lo with
// a plain header, reads the header and the device and calls no other
// helper.
func (b *Backstop) Program() (*ebpf.Program, error) {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, bsKey+8, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, bsKey+16, asm.R1, asm.DWord),
		asm.StoreImm(asm.RFP, bsReport+32, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, bsHeader),
		asm.Mov.Imm(asm.R4, 20), asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "foreign"),
		asm.LoadMem(asm.R2, asm.RFP, bsHeader, asm.Byte),
		asm.JEq.Imm(asm.R2, ip4VersionIHL, "v4"),
		asm.RSh.Imm(asm.R2, 4),
		asm.JEq.Imm(asm.R2, 6, "v6"),
		asm.JNE.Imm(asm.R2, 4, "foreign"), // not IP
		// IPv4 with options: its destination, the first hop, reported.
		asm.LoadMem(asm.R2, asm.RFP, bsHeader+ip4Daddr, asm.Word),
		asm.StoreMem(asm.RFP, bsKey+8, asm.R2, asm.Word),
		asm.StoreImm(asm.RFP, bsReport+32, 4, asm.Word),
		asm.Ja.Label("foreign"),
		asm.LoadMem(asm.R2, asm.RFP, bsHeader+ip4Daddr, asm.Word).WithSymbol("v4"),
		asm.StoreMem(asm.RFP, bsKey+8, asm.R2, asm.Word),
		asm.StoreImm(asm.RFP, bsReport+32, 4, asm.Word),
		asm.Ja.Label("device"),
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("v6"), asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, bsHeader),
		asm.Mov.Imm(asm.R4, egressHdrLen), asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "foreign"),
		asm.StoreImm(asm.RFP, bsReport+32, 6, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, bsHeader+ip6NextHdr, asm.Byte),
		asm.JEq.Imm(asm.R2, 6, "v6dst"),  // TCP
		asm.JEq.Imm(asm.R2, 17, "v6dst"), // UDP
		asm.JEq.Imm(asm.R2, 58, "v6dst"), // ICMPv6
		asm.Mov.Imm(asm.R7, DropOptions),
		asm.Ja.Label("v6key"),
		asm.Mov.Imm(asm.R7, 0).WithSymbol("v6dst"),
		asm.LoadMem(asm.R2, asm.RFP, bsHeader+ip6Daddr, asm.DWord).WithSymbol("v6key"),
		asm.StoreMem(asm.RFP, bsKey+8, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, bsHeader+ip6Daddr+8, asm.DWord),
		asm.StoreMem(asm.RFP, bsKey+16, asm.R2, asm.DWord),
		asm.JNE.Imm(asm.R7, 0, "namespace"), // extension headers
		// Through lo: passed.
		asm.LoadMem(asm.R2, asm.R6, offSkbIfindex, asm.Word).WithSymbol("device"),
		asm.JEq.Imm(asm.R2, loIfindex, "pass"),
		asm.Mov.Imm(asm.R7, DropInterface),
		asm.Ja.Label("namespace"),
		asm.Mov.Imm(asm.R7, DropOptions).WithSymbol("foreign"),
		// A packet of a namespace the tree made stays in the tree's.
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("namespace"), asm.FnGetNetnsCookie.Call(),
		asm.LoadImm(asm.R1, int64(b.netns), asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R1, "pass"),
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, bsKey, asm.R0, asm.DWord),
		asm.JEq.Imm(asm.R7, DropOptions, "drop"),
		// To a destination allowed on the socket.
		asm.LoadMapPtr(asm.R1, b.allowed.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, bsKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		// Dropped: reported, with the sender where there is one.
		asm.FnGetCurrentPidTgid.Call().WithSymbol("drop"),
		asm.StoreMem(asm.RFP, bsReport, asm.R0, asm.DWord),
		asm.StoreMem(asm.RFP, bsReport+36, asm.R7, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, offSkbIfindex, asm.Word),
		asm.StoreMem(asm.RFP, bsReport+40, asm.R1, asm.DWord),
	}
	for off := int16(0); off < 24; off += 8 {
		insns = append(insns, asm.LoadMem(asm.R1, asm.RFP, bsKey+off, asm.DWord),
			asm.StoreMem(asm.RFP, bsReport+8+off, asm.R1, asm.DWord))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, b.drops.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, bsReport),
		asm.Mov.Imm(asm.R3, droppedEventLen), asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("pass"), asm.Return(),
	)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "nettrap_backstop", Type: ebpf.CGroupSKB,
		AttachType: ebpf.AttachCGroupInetEgress, Instructions: insns, License: "GPL"})
	if err != nil {
		return nil, fmt.Errorf("load the backstop: %w", err)
	}
	return p, nil
}
