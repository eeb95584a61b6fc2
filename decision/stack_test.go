package decision

import (
	"errors"
	"testing"

	"github.com/nettrap/nettrap/callstack"
)

type stackTask struct {
	FixedTask
	s   *callstack.Stack
	tab *callstack.Table
	err error
}

func (t stackTask) Stack() (*callstack.Stack, *callstack.Table, error) { return t.s, t.tab, t.err }

// StackOf gives a stack only when the task can read one and did: a task
// without the interface, an error, no table or no frame mean no stack.
func TestStackOf(t *testing.T) {
	tab := &callstack.Table{Module: "example.com/m"}
	s := &callstack.Stack{Frames: []callstack.Frame{{Func: "example.com/m.F", File: "/m/f.go", Line: 3}}, Complete: true}
	for _, tc := range []struct {
		name string
		task Task
		ok   bool
	}{
		{"no interface", FixedTask{}, false},
		{"stack", stackTask{s: s, tab: tab}, true},
		{"error", stackTask{s: s, tab: tab, err: errors.New("gone")}, false},
		{"no table", stackTask{s: s}, false},
		{"no frame", stackTask{s: &callstack.Stack{Stop: "pc outside Go code"}, tab: tab}, false},
	} {
		gs, gtab := StackOf(tc.task)
		if ok := gs != nil && gtab != nil; ok != tc.ok || (ok && (gs != s || gtab != tab)) {
			t.Errorf("%s: StackOf = %v, %v; want a stack %v", tc.name, gs, gtab, tc.ok)
		}
	}
}
