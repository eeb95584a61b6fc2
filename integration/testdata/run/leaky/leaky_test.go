package leaky

import (
	"testing"

	"example.com/runfix/fix"
)

// TestLeak swallows the error of a connect to an external address.
func TestLeak(t *testing.T) {
	fix.Require(t)
	t.Log("dial:", fix.Dial("tcp", "203.0.113.7:443"))
}

func TestFine(t *testing.T) {}

// TestMarked may use the network: allowed and audited.
func TestMarked(t *testing.T) {
	t.Attr("nettrap", "network")
	fix.Require(t)
	t.Log("dial:", fix.Dial("tcp", "198.51.100.1:80"))
}

// TestStaleMarker is marked but makes no attempt.
func TestStaleMarker(t *testing.T) {
	t.Attr("nettrap", "network")
}
