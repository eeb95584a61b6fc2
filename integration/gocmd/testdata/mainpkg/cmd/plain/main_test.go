package main

import (
	"net"
	"os"
	"testing"
	"time"
)

func TestAdd(t *testing.T) {
	if add(1, 2) != 3 {
		t.Fatal("add(1, 2) != 3")
	}
}

// TestLeak dials an outside address and swallows the error: nettrap must
// fail it anyway. It aims only at the fake host inside nettrap's
// integration sandbox (NTRUNFIX=1), and skips elsewhere.
func TestLeak(t *testing.T) {
	if os.Getenv("NTRUNFIX") != "1" {
		t.Skip("fixture of nettrap's integration tests: runs only in their sandbox (NTRUNFIX=1)")
	}
	if c, err := net.DialTimeout("tcp", "203.0.113.7:443", 5*time.Second); err == nil {
		c.Close()
	}
}
