package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// NATTable is the nftables table dnatConnect adds (family ip).
const NATTable = "nettrap_escapee"

// redirected is where both redirections send a connect to 127.0.0.2:80.
var redirected = [4]byte{203, 0, 113, 7}

// dnatConnect adds an nftables DNAT rule sending 127.0.0.2:80 to
// 203.0.113.7:80 (with a masquerade for the way out), then connects to
// 127.0.0.2:80 and sends marker, whether the rule went in or not. The
// error is the rule's, if any.
func dnatConnect(marker string) error {
	ruleErr := addDNAT()
	connErr := sendLoopback80(marker)
	if ruleErr != nil {
		return fmt.Errorf("nftables: %w", ruleErr)
	}
	return connErr
}

func addDNAT() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: NATTable})
	out := c.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	post := c.AddChain(&nftables.Chain{Name: "post", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{127, 0, 0, 2}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 80}},
		&expr.Immediate{Register: 1, Data: redirected[:]},
		&expr.Immediate{Register: 2, Data: []byte{0, 80}},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2},
	}})
	lo := make([]byte, unix.IFNAMSIZ)
	copy(lo, "lo")
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: lo},
		&expr.Masq{},
	}})
	return c.Flush()
}

// sendLoopback80 connects to 127.0.0.2:80 and sends marker.
func sendLoopback80(marker string) error {
	conn, err := net.Dial("tcp4", "127.0.0.2:80")
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(marker))
	return err
}

// cgroupConnect attaches a cgroup connect4 program rewriting 127.0.0.2 to
// 203.0.113.7 to a fresh child cgroup of its own, moves itself there,
// connects to 127.0.0.2:80 and sends marker; then it moves back and
// removes the cgroup. It never touches a cgroup other processes are in.
// Errors say their stage ("cgroup:", "load:", "attach:").
func cgroupConnect(marker string) (err error) {
	parent, err := procfs.OwnCgroup2()
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	child := filepath.Join(parent, "nettrap-escapee-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(child, 0o755); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	defer func() {
		back := writeProcs(parent)
		if rm := os.Remove(child); err == nil {
			err = errors.Join(back, rm)
		}
	}()
	if err := writeProcs(child); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	prog, err := connect4Rewrite()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer prog.Close()
	l, attachErr := link.AttachCgroup(link.CgroupOptions{Path: child, Attach: ebpf.AttachCGroupInet4Connect, Program: prog})
	if attachErr == nil {
		defer l.Close()
	}
	connErr := sendLoopback80(marker)
	if attachErr != nil {
		return fmt.Errorf("attach: %w", attachErr)
	}
	return connErr
}

// connect4Rewrite: if (ctx->user_ip4 == 127.0.0.2) ctx->user_ip4 =
// 203.0.113.7; return 1 (allow). struct bpf_sock_addr has user_ip4 at 4,
// in network order.
func connect4Rewrite() (*ebpf.Program, error) {
	ne := func(b [4]byte) int32 {
		return int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.CGroupSockAddr, AttachType: ebpf.AttachCGroupInet4Connect, License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 4, asm.Word),
			asm.JNE.Imm(asm.R2, ne([4]byte{127, 0, 0, 2}), "out"),
			asm.Mov.Imm32(asm.R3, ne(redirected)),
			asm.StoreMem(asm.R1, 4, asm.R3, asm.Word),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
			asm.Return(),
		},
	})
}

func writeProcs(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
}
