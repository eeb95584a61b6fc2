package main

import "testing"

func TestPing(t *testing.T) {
	_ = ping(5016)
}
