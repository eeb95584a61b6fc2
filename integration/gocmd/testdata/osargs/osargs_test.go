// Package osargs shows the arguments the test binary got: under nettrap
// -test.v=test2json is among them once, whatever the go command passed.
package osargs

import (
	"os"
	"testing"
)

func TestFramingOnce(t *testing.T) {
	n := 0
	for _, a := range os.Args[1:] {
		if a == "-test.v=test2json" || a == "--test.v=test2json" {
			n++
		}
	}
	t.Logf("test2json=%d args=%q", n, os.Args[1:])
	if n > 1 {
		t.Errorf("-test.v=test2json %d times in %q, want at most once", n, os.Args[1:])
	}
}
