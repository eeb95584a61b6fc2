package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"

	"golang.org/x/sys/unix"
)

// The legacy iptables "nat" table, written with setsockopt on an
// ordinary UDP socket: nf_setsockopt serves every inet socket, and checks
// only the caller's CAP_NET_ADMIN. Layouts are the 64-bit ones of
// linux/netfilter_ipv4/ip_tables.h and linux/netfilter/x_tables.h.
const (
	iptSoSetReplace = 64 // IPT_SO_SET_REPLACE
	iptSoGetInfo    = 64 // IPT_SO_GET_INFO (getsockopt)

	sizeofIptGetinfo = 84  // name[32], valid_hooks, hook_entry[5], underflow[5], num_entries, size
	sizeofIptReplace = 96  // name[32], valid_hooks, num_entries, size, hook_entry[5], underflow[5], num_counters, counters*
	sizeofIptEntry   = 112 // struct ipt_ip (84), nfcache, target_offset, next_offset, comefrom, xt_counters
	sizeofXtTarget   = 32  // struct xt_entry_target: target_size, name[29], revision
	sizeofXtCounters = 16

	hookPrerouting, hookInput, hookOutput, hookPostrouting = 0, 1, 3, 4
	natEmptyEntries                                        = 5 // four policies and the error entry

	nfAcceptVerdict                                          = -1 - 1 // a standard target's ACCEPT: -NF_ACCEPT-1 (NF_ACCEPT is 1)
	natRangeMapIPs                                           = 1      // NF_NAT_RANGE_MAP_IPS
	sizeofNatCompat                                          = 4 + 20 // struct nf_nat_ipv4_multi_range_compat with one range
	offIPDst, offIPDmsk, offOutIface, offOutMask, offIPProto = 4, 12, 32, 64, 80
)

// iptEntry is one rule: a match on struct ipt_ip, then a target.
type iptEntry struct {
	ip     [84]byte
	target []byte // the whole xt_entry_target, aligned
}

func xtAlign(n int) int { return (n + 7) &^ 7 }

func xtTarget(name string, revision byte, data []byte) []byte {
	b := make([]byte, xtAlign(sizeofXtTarget+len(data)))
	binary.NativeEndian.PutUint16(b[0:], uint16(len(b)))
	copy(b[2:31], name)
	b[31] = revision
	copy(b[sizeofXtTarget:], data)
	return b
}

func acceptPolicy() iptEntry {
	v := make([]byte, 4)
	verdict := int32(nfAcceptVerdict)
	binary.NativeEndian.PutUint32(v, uint32(verdict))
	return iptEntry{target: xtTarget("", 0, v)}
}

// natCompat is struct nf_nat_ipv4_multi_range_compat for DNAT to ip, or
// (ip invalid) for MASQUERADE.
func natCompat(ip netip.Addr) []byte {
	b := make([]byte, sizeofNatCompat)
	binary.NativeEndian.PutUint32(b[0:], 1) // rangesize
	if ip.IsValid() {
		binary.NativeEndian.PutUint32(b[4:], natRangeMapIPs)
		a := ip.As4()
		copy(b[8:], a[:])
		copy(b[12:], a[:])
	}
	return b
}

// natTable lays out ipt_replace for "nat": ACCEPT policies everywhere,
// plus, when dnat, "-A OUTPUT -d 127.0.0.2 -p tcp -j DNAT --to 203.0.113.7"
// and "-A POSTROUTING -o outIface -j MASQUERADE". oldEntries is the table's
// current entry count, for the counters the kernel hands back.
func natTable(dnat bool, outIface string, oldEntries int) ([]byte, []byte) {
	type chain struct {
		hook  int
		rules []iptEntry
	}
	var outRules, postRules []iptEntry
	if dnat {
		var r iptEntry
		copy(r.ip[offIPDst:], []byte{127, 0, 0, 2})
		copy(r.ip[offIPDmsk:], []byte{255, 255, 255, 255})
		binary.NativeEndian.PutUint16(r.ip[offIPProto:], unix.IPPROTO_TCP)
		r.target = xtTarget("DNAT", 0, natCompat(netip.AddrFrom4(redirected)))
		outRules = append(outRules, r)
		var m iptEntry
		copy(m.ip[offOutIface:], outIface)
		for i := 0; i <= len(outIface) && i < unix.IFNAMSIZ; i++ {
			m.ip[offOutMask+i] = 0xff
		}
		m.target = xtTarget("MASQUERADE", 0, natCompat(netip.Addr{}))
		postRules = append(postRules, m)
	}
	chains := []chain{{hookPrerouting, nil}, {hookInput, nil}, {hookOutput, outRules}, {hookPostrouting, postRules}}
	var hookEntry, underflow [5]uint32
	var body []byte
	n := 0
	add := func(e iptEntry) {
		b := make([]byte, sizeofIptEntry, sizeofIptEntry+len(e.target))
		copy(b, e.ip[:])
		binary.NativeEndian.PutUint16(b[88:], sizeofIptEntry)
		binary.NativeEndian.PutUint16(b[90:], uint16(sizeofIptEntry+len(e.target)))
		body = append(body, append(b, e.target...)...)
		n++
	}
	for _, c := range chains {
		hookEntry[c.hook] = uint32(len(body))
		for _, r := range c.rules {
			add(r)
		}
		underflow[c.hook] = uint32(len(body))
		add(acceptPolicy())
	}
	errName := make([]byte, 32)
	copy(errName, "ERROR")
	add(iptEntry{target: xtTarget("ERROR", 0, errName)})

	counters := make([]byte, sizeofXtCounters*max(oldEntries, 1))
	h := make([]byte, sizeofIptReplace)
	copy(h, "nat")
	ne := binary.NativeEndian
	ne.PutUint32(h[32:], 1<<hookPrerouting|1<<hookInput|1<<hookOutput|1<<hookPostrouting)
	ne.PutUint32(h[36:], uint32(n))
	ne.PutUint32(h[40:], uint32(len(body)))
	for i := range 5 {
		ne.PutUint32(h[44+4*i:], hookEntry[i])
		ne.PutUint32(h[64+4*i:], underflow[i])
	}
	ne.PutUint32(h[84:], uint32(oldEntries))
	ne.PutUint64(h[88:], sliceAddr(counters))
	return append(h, body...), counters
}

// natEntries is the entry count of the nat table (IPT_SO_GET_INFO).
func natEntries(fd int) (int, error) {
	info := make([]byte, sizeofIptGetinfo)
	copy(info, "nat")
	if _, err := getsockoptBuf(fd, unix.IPPROTO_IP, iptSoGetInfo, info); err != nil {
		return 0, sysErr("getsockopt(IPT_SO_GET_INFO)", err)
	}
	return int(binary.NativeEndian.Uint32(info[76:])), nil
}

// writeNat replaces the nat table (with the DNAT rules, or empty) through
// setsockopt on a UDP socket.
func writeNat(dnat bool, outIface string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(fd)
	old, err := natEntries(fd)
	if err != nil {
		return err
	}
	blob, counters := natTable(dnat, outIface, old)
	err = unix.SetsockoptString(fd, unix.IPPROTO_IP, iptSoSetReplace, string(blob))
	runtime.KeepAlive(counters) // the kernel writes the old counters there
	return sysErr("setsockopt(IPT_SO_SET_REPLACE)", err)
}

// iptDNATConnect writes the DNAT rules into the legacy nat table, then
// connects to 127.0.0.2:80 and sends marker, whether the rules went in or
// not. The error is the rules', if any.
func iptDNATConnect(outIface, marker string) error {
	ruleErr := writeNat(true, outIface)
	connErr := sendLoopback80(marker)
	if ruleErr != nil {
		return ruleErr
	}
	return connErr
}

// iptEmpty fails unless the legacy nat table holds only its policies.
func iptEmpty() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(fd)
	n, err := natEntries(fd)
	if err == nil && n != natEmptyEntries {
		err = fmt.Errorf("the nat table has %d entries, want %d", n, natEmptyEntries)
	}
	return err
}
