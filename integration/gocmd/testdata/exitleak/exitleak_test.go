// Package exitleak: a test that dials and then calls os.Exit(0).
package exitleak

import (
	"os"
	"testing"

	"example.com/fixtures/fx"
)

func TestOK(t *testing.T) {}

func TestExit(t *testing.T) {
	_ = fx.Dial(fx.External, 3002, t.Name())
	os.Exit(0)
}
