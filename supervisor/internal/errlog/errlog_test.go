package errlog

import (
	"errors"
	"fmt"
	"testing"
)

// Errors past maxErrors are counted and said, not dropped.
func TestErrorLogCountsTheRest(t *testing.T) {
	var l Log
	for i := range maxErrors + 5 {
		l.Add(fmt.Errorf("error %d", i))
	}
	got := l.Take()
	if len(got) != maxErrors+1 {
		t.Fatalf("%d errors, want %d and a count", len(got), maxErrors)
	}
	if got[0].Error() != "error 0" || got[maxErrors-1].Error() != fmt.Sprintf("error %d", maxErrors-1) {
		t.Errorf("kept %v, want the first %d", got[:maxErrors], maxErrors)
	}
	if last := got[maxErrors].Error(); last != "and 5 more" {
		t.Errorf("last error %q, want %q", last, "and 5 more")
	}
	if again := l.Take(); len(again) != 0 {
		t.Errorf("taken twice: %v", again)
	}
	l.Add(errors.New("late"))
	if late := l.Take(); len(late) != 1 || late[0].Error() != "late" {
		t.Errorf("after a take: %v, want the late error alone", late)
	}
}
