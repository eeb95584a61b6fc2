// Command wheremain is the fixture of nettrap's location lines for a
// package main's test: the test binary names the package's functions by
// its import path (example.com/fixtures/wheremain.ping), and the line
// must say main.ping, as Go says in the program. Keep the line numbers
// stable: where.golden names them.
//
// Its dial goes to a fake host of the integration sandbox (see package
// fx): outside it, fx.Addr refuses.
package main

import (
	"net"

	"example.com/fixtures/fx"
)

func main() {
	_ = ping(5016)
}

//go:noinline
func ping(port int) error {
	addr, err := fx.Addr(fx.External, port)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, fx.Timeout)
	if err != nil {
		return err
	}
	return c.Close()
}
