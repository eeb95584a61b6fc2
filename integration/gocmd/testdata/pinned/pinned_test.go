// Package pinned: parallel tests run with -test.parallel=1, one at a
// time, so that an attempt is pinned to the test that made it.
package pinned

import (
	"testing"

	"example.com/fixtures/fx"
)

func TestPinnedA(t *testing.T) {
	t.Parallel()
	_ = fx.Dial(fx.External, 1102, t.Name())
}

func TestPinnedB(t *testing.T) {
	t.Parallel()
}
