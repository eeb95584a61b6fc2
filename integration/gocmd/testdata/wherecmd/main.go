// Command wherecmd is the generic-mode case of nettrap's location lines
// (a Go program that is not a test): it dials from a function of its
// own, so that the line names main.go and main.dial. The destination is
// a fake host of the integration sandbox, checked by fx.Addr.
package main

import (
	"fmt"
	"net"
	"os"

	"example.com/fixtures/fx"
)

func main() {
	if err := dial(5010); err != nil {
		fmt.Println("dial:", err)
		os.Exit(3)
	}
}

func dial(port int) error {
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
