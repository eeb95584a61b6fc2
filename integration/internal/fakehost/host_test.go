package fakehost_test

import (
	"net"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// waitLimit only bounds a broken run; nothing here is timed.
const waitLimit = 30 * time.Second

func TestMain(m *testing.M) { sandbox.Main(m) }

// probed are endpoints of every kind a probe must handle: plain TCP and
// UDP, the fake DNS over both (which reads TCP length-prefixed), the
// limited broadcast and a multicast group.
func probed() []fakehost.Endpoint {
	return []fakehost.Endpoint{
		fakehost.TCP("203.0.113.7:443"), fakehost.UDP("203.0.113.7:443"),
		fakehost.TCP("192.0.2.53:53"), fakehost.UDP("[2001:db8::53]:53"),
		{Proto: "udp", Addr: fakehost.BroadcastV4}, {Proto: "udp", Addr: fakehost.MDNSGroup},
	}
}

// TestArrivedBackToBack is the regression test for checks sharing a host:
// many checks in a row on the same endpoints, each from its own cursor or
// all from one, must each see nothing, whatever state the previous
// sentinel is in.
func TestArrivedBackToBack(t *testing.T) {
	eps := probed()
	h := fakehost.Start(t, eps...)
	first := h.Mark()
	for range 50 {
		for _, e := range eps {
			for _, c := range []fakehost.Cursor{h.Mark(), first} {
				got, err := h.Arrived(c, e, waitLimit)
				if err != nil {
					t.Fatalf("%v:\n%s", err, h.Dump())
				}
				if len(got) != 0 {
					t.Fatalf("%s: sentinels or nothing were sent, Arrived reported %v", e, got)
				}
			}
		}
	}
}

// TestArrivedReportsTraffic: what is sent after the cursor is reported,
// with or without a payload; what was recorded before it is not.
func TestArrivedReportsTraffic(t *testing.T) {
	tcp, udp := fakehost.TCP("198.51.100.1:80"), fakehost.UDP("198.51.100.1:80")
	h := fakehost.Start(t, tcp, udp)
	before := h.Mark()
	send(t, tcp, "earlier")
	if _, ok := h.WaitFor(before, func(r fakehost.Record) bool { return string(r.Data) == "earlier" }, waitLimit); !ok {
		t.Fatalf("earlier connection never recorded:\n%s", h.Dump())
	}
	mark := h.Mark()
	send(t, tcp, "")
	send(t, tcp, "payload")
	send(t, udp, "datagram")
	got, err := h.Arrived(mark, tcp, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("tcp: want the bare connect and the payload after the cursor, got %v\n%s", got, h.Dump())
	}
	got, err = h.Arrived(mark, udp, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Data) != "datagram" {
		t.Errorf("udp: want the datagram, got %v", got)
	}
	if got, _ := h.Arrived(before, tcp, waitLimit); len(got) != 3 {
		t.Errorf("tcp from the first cursor: want 3 records, got %v", got)
	}
}

func send(t *testing.T, e fakehost.Endpoint, data string) {
	t.Helper()
	c, err := net.Dial(e.Proto, e.Addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if data != "" {
		if _, err := c.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}
