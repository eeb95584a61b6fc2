package ancestry

import (
	"strconv"
	"testing"
)

// BenchmarkRead measures reading a blocked goroutine's chain (three live
// creators, or with tracebackancestors three kept ones) from a process
// with more goroutines parked beside it: what a denied call pays on top
// of its stack (callstack.BenchmarkUnwind), with a warm Layout.
func BenchmarkRead(b *testing.B) {
	for _, extra := range []int{10, 1000} {
		b.Run("live/goroutines="+strconv.Itoa(extra), func(b *testing.B) {
			readVictim(b, "live", nil, extraEnv+"="+strconv.Itoa(extra))
		})
		b.Run("kept/goroutines="+strconv.Itoa(extra), func(b *testing.B) {
			readVictim(b, "exited", nil, extraEnv+"="+strconv.Itoa(extra), "GODEBUG=tracebackancestors=8")
		})
	}
}
