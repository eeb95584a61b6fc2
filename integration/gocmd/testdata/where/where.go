// Package where is the fixture of nettrap's location lines (issue 21):
// each test makes one blocked attempt from a different place (the test
// itself, a helper two calls deep, a method, a closure, a goroutine it
// waits for, one it leaves running, a parallel subtest, TestMain), and
// nettrap's integration tests compare the lines, audit stacks and
// annotations with where.golden. Keep the line numbers stable: the
// golden file names them.
//
// Every dial here goes to a fake host of the integration sandbox (see
// package fx): outside it, fx.Addr refuses.
package where

import (
	"net"

	"example.com/fixtures/fx"
)

// Fetch is the helper two calls deep: the test calls Fetch, Fetch calls
// fetchQuote, which dials.
func Fetch(port int) error {
	return fetchQuote(port)
}

//go:noinline
func fetchQuote(port int) error {
	addr, err := fx.Addr(fx.External, port)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, fx.Timeout)
	return closeConn(c, err)
}

// Client is a client type whose method dials.
type Client struct{ Port int }

// Get dials the client's port.
func (c *Client) Get() error {
	addr, err := fx.Addr(fx.External, c.Port)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", addr, fx.Timeout)
	return closeConn(conn, err)
}

func closeConn(c net.Conn, err error) error {
	if err != nil {
		return err
	}
	return c.Close()
}
