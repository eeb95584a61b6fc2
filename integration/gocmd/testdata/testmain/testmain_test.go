// Package testmain dials from TestMain, before and after m.Run: collection
// time, which no marker covers.
package testmain

import (
	"os"
	"testing"

	"example.com/fixtures/fx"
)

func TestMain(m *testing.M) {
	_ = fx.Dial(fx.Private, 2001, "TestMain/before")
	code := m.Run()
	_ = fx.Dial(fx.Private, 2002, "TestMain/after")
	os.Exit(code)
}

func TestOK(t *testing.T) {}

func TestMarkedOK(t *testing.T) {
	t.Attr("nettrap", "network")
	if err := fx.Dial(fx.Private, 2004, t.Name()); err != nil {
		t.Fatal(err)
	}
}
