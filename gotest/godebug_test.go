package gotest

import (
	"slices"
	"testing"
)

// TestEnvAncestors: the test binary's GODEBUG gets tracebackancestors,
// beside the user's settings, unless the user set it.
func TestEnvAncestors(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"HOME=/h"}, []string{"HOME=/h", "GODEBUG=tracebackancestors=8"}},
		{[]string{"GODEBUG=http2client=0", "A=b"}, []string{"A=b", "GODEBUG=http2client=0,tracebackancestors=8"}},
		{[]string{"GODEBUG=tracebackancestors=0"}, []string{"GODEBUG=tracebackancestors=0"}},
		{[]string{"GODEBUG=x=1, tracebackancestors=3"}, []string{"GODEBUG=x=1, tracebackancestors=3"}},
		{[]string{"GODEBUG="}, []string{"GODEBUG=tracebackancestors=8"}},
	} {
		if got := Env(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Env(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
