package emulate

import (
	"fmt"
	"testing"
)

func TestSkip(t *testing.T) {
	bufs := []remoteBuf{{100, 10}, {200, 0}, {300, 5}}
	for _, tt := range []struct {
		n    uint64
		want string
	}{
		{0, "[{100 10} {200 0} {300 5}]"},
		{4, "[{104 6} {200 0} {300 5}]"},
		{10, "[{300 5}]"}, // the empty buffer goes with the one before it
		{12, "[{302 3}]"},
		{15, "[]"},
		{99, "[]"},
	} {
		if got := fmt.Sprint(skip(bufs, tt.n)); got != tt.want {
			t.Errorf("skip(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}
