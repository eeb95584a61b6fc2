package nlparse

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// request serializes a NETLINK_ROUTE request as vishvananda/netlink
// builds it (the library CNI plugins use), independently of the walker.
func request(typ int, data ...nl.NetlinkRequestData) []byte {
	req := nl.NewNetlinkRequest(typ, unix.NLM_F_REQUEST)
	for _, d := range data {
		req.AddData(d)
	}
	return req.Serialize()
}

func linkInfo(kind string, data ...*nl.RtAttr) *nl.RtAttr {
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
	d := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	for _, a := range data {
		d.AddChild(a)
	}
	return info
}

func peerInfo(attrs ...*nl.RtAttr) *nl.RtAttr {
	p := nl.NewRtAttr(nl.VETH_INFO_PEER, nl.NewIfInfomsg(unix.AF_UNSPEC).Serialize())
	for _, a := range attrs {
		p.AddChild(a)
	}
	return p
}

func u32(typ int, v uint32) *nl.RtAttr { return nl.NewRtAttr(typ, nl.Uint32Attr(v)) }

// tcBPFFilter is an RTM_NEWTFILTER of kind bpf naming program fd.
func tcBPFFilter(kind string, fd uint32) []byte {
	opts := nl.NewRtAttr(unix.TCA_OPTIONS, nil)
	opts.AddChild(u32(tcaBPFFd, fd))
	return request(unix.RTM_NEWTFILTER, rawData(make([]byte, sizeofTcmsg)),
		nl.NewRtAttr(unix.TCA_KIND, nl.ZeroTerminated(kind)), opts)
}

type rawData []byte

func (r rawData) Len() int          { return len(r) }
func (r rawData) Serialize() []byte { return r }

func TestRouteFdOffsets(t *testing.T) {
	ifname := nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("x0"))
	ifi := nl.NewIfInfomsg(unix.AF_UNSPEC)
	xdp := nl.NewRtAttr(unix.IFLA_XDP, nil)
	xdp.AddChild(u32(unix.IFLA_XDP_FD, 0xffffffff))
	xdp.AddChild(u32(unix.IFLA_XDP_EXPECTED_FD, 12))
	veth := request(unix.RTM_NEWLINK, ifi, ifname, u32(unix.IFLA_NET_NS_FD, 9),
		linkInfo("veth", peerInfo(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("x1")), u32(unix.IFLA_NET_NS_FD, 7))))
	cases := []struct {
		name string
		p    []byte
		want []uint32 // the values at the offsets found, in order
	}{
		{"veth, both ends moved", veth, []uint32{9, 7}},
		{"vxcan peer", request(unix.RTM_NEWLINK, ifi, linkInfo("vxcan", peerInfo(u32(unix.IFLA_NET_NS_FD, 4)))), []uint32{4}},
		{"netkit peer", request(unix.RTM_NEWLINK, ifi, linkInfo("netkit", peerInfo(u32(unix.IFLA_NET_NS_FD, 4)))), []uint32{4}},
		// A vlan's attribute 1 is its id, not a peer.
		{"vlan id is no peer", request(unix.RTM_NEWLINK, ifi, linkInfo("vlan", u32(1, 7))), nil},
		{"setlink netns", request(unix.RTM_SETLINK, ifi, u32(unix.IFLA_NET_NS_FD, 3)), []uint32{3}},
		{"setlink by pid", request(unix.RTM_SETLINK, ifi, u32(unix.IFLA_NET_NS_PID, 3)), nil},
		{"xdp", request(unix.RTM_SETLINK, ifi, xdp), []uint32{0xffffffff, 12}},
		{"newnsid", request(unix.RTM_NEWNSID, nl.NewRtGenMsg(), u32(unix.NETNSA_FD, 5), u32(unix.NETNSA_NSID, 77)), []uint32{5}},
		{"getnsid by pid", request(unix.RTM_GETNSID, nl.NewRtGenMsg(), u32(unix.NETNSA_PID, 5)), nil},
		{"tc bpf", tcBPFFilter("bpf", 11), []uint32{11}},
		{"tc u32 option 6 is no fd", tcBPFFilter("u32", 11), nil},
		{"route", request(unix.RTM_NEWROUTE, nl.NewRtMsg(), u32(unix.RTA_OIF, 3)), nil},
		{"two messages", append(append([]byte(nil), veth...), request(unix.RTM_NEWNSID, nl.NewRtGenMsg(), u32(unix.NETNSA_FD, 6))...), []uint32{9, 7, 6}},
		{"truncated", veth[:len(veth)-3], nil},
		{"empty", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []uint32
			for _, off := range RouteFdOffsets(c.p) {
				got = append(got, binary.NativeEndian.Uint32(c.p[off:]))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("descriptors %v, want %v", got, c.want)
			}
		})
	}
}

// FuzzRouteFdOffsets: any bytes are walked without a panic, and every
// offset found has a whole 32-bit value behind it, in distinct places.
func FuzzRouteFdOffsets(f *testing.F) {
	ifi := nl.NewIfInfomsg(unix.AF_UNSPEC)
	f.Add(request(unix.RTM_NEWLINK, ifi, u32(unix.IFLA_NET_NS_FD, 9), linkInfo("veth", peerInfo(u32(unix.IFLA_NET_NS_FD, 7)))))
	f.Add(request(unix.RTM_NEWNSID, nl.NewRtGenMsg(), u32(unix.NETNSA_FD, 5)))
	f.Add(tcBPFFilter("bpf", 11))
	f.Fuzz(func(t *testing.T, p []byte) {
		seen := map[int]bool{}
		for _, off := range RouteFdOffsets(p) {
			if off < 0 || off+4 > len(p) || seen[off] {
				t.Fatalf("offset %d of %d bytes (seen %v)", off, len(p), seen[off])
			}
			seen[off] = true
		}
	})
}
