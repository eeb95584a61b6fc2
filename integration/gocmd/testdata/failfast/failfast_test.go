// Package failfast: nettrap fails TestFirst (its attempt is denied, the
// test itself passes). Under -test.failfast, TestSecond and TestThird must
// not run, as they would not after a failure the binary knows of.
// TestThird is marked: its connection reaching the fake host would prove
// that it ran.
package failfast

import (
	"testing"

	"example.com/fixtures/fx"
)

func TestFirst(t *testing.T) {
	_ = fx.Dial(fx.External, 4002, t.Name())
}

func TestSecond(t *testing.T) {
	_ = fx.Dial(fx.External, 4003, t.Name())
}

func TestThird(t *testing.T) {
	t.Attr("nettrap", "network")
	if err := fx.Dial(fx.External, 4004, t.Name()); err != nil {
		t.Fatal(err)
	}
}
