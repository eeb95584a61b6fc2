// Package panicleak: a test that dials and then panics.
package panicleak

import (
	"testing"

	"example.com/fixtures/fx"
)

func TestOK(t *testing.T) {}

func TestPanic(t *testing.T) {
	_ = fx.Dial(fx.External, 3001, t.Name())
	panic("boom")
}
