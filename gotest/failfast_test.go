package gotest

import (
	"strings"
	"testing"
)

func TestFailFastArgs(t *testing.T) {
	for _, tc := range []struct {
		args string
		want bool
	}{
		{"", false},
		{"-test.failfast", true},
		{"--test.failfast", true},
		{"-test.failfast=true", true}, // what the go command passes
		{"-test.failfast=1", true},
		{"-test.failfast=false", false},
		{"-test.failfast=true -test.failfast=false", false},
		{"-test.failfast=false -test.failfast", true},
		{"-test.v=test2json -test.run TestX -test.failfast", true},
		{"-test.run -test.failfast", false}, // the value of -test.run
		{"-test.run=X -test.count 2 -test.failfast", true},
		{"-test.short -test.failfast", true},
		{"-test.failfast=maybe", false}, // the binary refuses it
		{"-- -test.failfast", false},
		{"pos -test.failfast", false},
		{"- -test.failfast", false},
		{"-test.v -test.failfast", true},
		{"-myflag value -test.failfast", true},
		{"-mybool -test.failfast", true},
		{"---test.failfast", false},
		{"-test.failfast -- -test.failfast=false", true},
	} {
		if got := FailFast(strings.Fields(tc.args)); got != tc.want {
			t.Errorf("FailFast(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
