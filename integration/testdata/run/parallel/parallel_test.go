package parallel

import (
	"testing"

	"example.com/runfix/fix"
)

func TestParA(t *testing.T) {
	t.Parallel()
	fix.Require(t)
	t.Log("dial:", fix.Dial("tcp", "192.0.2.1:443"))
}

func TestParB(t *testing.T) {
	t.Parallel()
	fix.Require(t)
	t.Log("dial:", fix.Dial("udp", "[2001:db8::1]:443"))
	t.Log("dial:", fix.Dial("tcp", "[2001:db8::1]:443"))
}
