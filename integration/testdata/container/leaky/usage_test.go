// Package usage is a fixture for scripts/container-test.sh: a suite with one
// test that forgot its mock and dials a documentation address (RFC 5737).
// The container runs with --network=none, so nothing can leave it.
package usage

import (
	"net"
	"strconv"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	if got := format(3); got != "3 calls" {
		t.Fatalf("format(3) = %q", got)
	}
}

// TestReportUsage sends the usage report to the real collector instead of a
// fake one.
func TestReportUsage(t *testing.T) {
	c, err := net.DialTimeout("tcp", "192.0.2.1:443", 5*time.Second)
	if err != nil {
		t.Fatalf("report usage: %v", err)
	}
	c.Close()
}

func format(n int) string {
	if n == 1 {
		return "1 call"
	}
	return strconv.Itoa(n) + " calls"
}
