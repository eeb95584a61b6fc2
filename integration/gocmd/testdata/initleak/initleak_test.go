// Package initleak dials from init(): collection time.
package initleak

import (
	"testing"

	"example.com/fixtures/fx"
)

func init() {
	_ = fx.Dial(fx.Home, 2003, "init")
}

func TestOK(t *testing.T) {}
