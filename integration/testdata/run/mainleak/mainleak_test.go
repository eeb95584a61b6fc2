package mainleak

import (
	"fmt"
	"os"
	"testing"

	"example.com/runfix/fix"
)

// TestMain makes an attempt before m.Run: collection time.
func TestMain(m *testing.M) {
	if fix.Enabled() {
		fmt.Println("dial:", fix.Dial("tcp", "10.0.0.1:80"))
	}
	os.Exit(m.Run())
}

func TestNothing(t *testing.T) {}
