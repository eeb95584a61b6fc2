// Package oldgo is a module whose go line (1.22) predates t.Attr, which
// go vet refuses there ("testing.Attr requires go1.25 or later"): its
// test that needs the network logs nettrap's marker instead, which works
// with any go line and imports nothing of nettrap's.
//
// It exists only to be run by nettrap's integration tests, inside their
// private network namespace, where 203.0.113.7 is on lo.
package oldgo

import (
	"net"
	"testing"
	"time"
)

const host = "203.0.113.7"

func TestLive(t *testing.T) {
	t.Log("nettrap:network")
	requireLocal(t)
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, "4201"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("TestLive")); err != nil {
		t.Fatal(err)
	}
}

// requireLocal skips outside the integration sandbox: host must be an
// address of this machine, so that no packet leaves it.
func requireLocal(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.ParseIP(host)) {
			return
		}
	}
	t.Skipf("%s is not on this machine: run only from nettrap's integration tests", host)
}
