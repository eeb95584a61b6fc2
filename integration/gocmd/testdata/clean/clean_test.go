// Package clean makes no network attempt (loopback only): its output must
// be the same with and without nettrap.
package clean

import (
	"fmt"
	"net"
	"testing"
)

func TestLog(t *testing.T) {
	t.Log("a log line")
	fmt.Println("printed to stdout")
}

func TestLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Logf("dialed loopback")
}

func TestSub(t *testing.T) {
	t.Run("one", func(t *testing.T) { t.Log("in one") })
	t.Run("two", func(t *testing.T) {
		t.Run("deep", func(t *testing.T) { t.Log("in deep") })
	})
}

func TestParallelSub(t *testing.T) {
	t.Run("only", func(t *testing.T) {
		t.Parallel()
		t.Log("parallel")
	})
}

func TestSkip(t *testing.T) {
	t.Skip("skipped on purpose")
}

func TestAttr(t *testing.T) {
	t.Attr("team", "fixtures")
}

func Example_hello() {
	fmt.Println("hello")
	// Output: hello
}
