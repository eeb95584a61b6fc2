package main

import (
	"fmt"
	"net"
	"time"
)

// listenDial listens on ADDR (port 0 for any), connects to it and passes
// a byte over the accepted connection: a bind, a listen and an allowed
// loopback connect in one. The value is the address it listened on.
func listenDial(args []string) (any, error) {
	ln, err := net.Listen("tcp", args[0])
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), ioTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	a, err := ln.Accept()
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if _, err := a.Write([]byte{'x'}); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return nil, err
	}
	return ln.Addr().String(), nil
}

// connectLoop connects to ADDR over and over, printing one line per
// attempt on stdout ("ok", or the errno or error), until it is killed:
// for the tests that kill the supervisor mid-run.
func connectLoop(args []string) (any, error) {
	for {
		_, err := tcpConnect(args)
		switch {
		case err == nil:
			fmt.Println("ok")
		case errnoName(err) != "":
			fmt.Println(errnoName(err))
		default:
			fmt.Println(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
