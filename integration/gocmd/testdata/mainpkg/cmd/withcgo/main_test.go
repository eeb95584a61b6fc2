package main

import "testing"

func TestAbs(t *testing.T) {
	if abs(-2) != 2 {
		t.Fatal("abs(-2) != 2")
	}
}
