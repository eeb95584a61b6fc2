package decision

import (
	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/callstack"
)

// StackReader is what a Task may also do: read the calling thread's
// stack while the call still waits (the thread is held in the kernel,
// or stopped by ptrace). A decider asks for it only for a call it
// denies or audits, at most once per call, and never on the allowed
// fast path.
//
// An engine implements it with the Table of the caller's executable
// (callstack.Open, cached per executable) and either
// (*callstack.Table).UnwindThread(pid, tid) (seccomp user
// notification: pc and sp from /proc/TID/syscall) or
// (*callstack.Table).Unwind(callstack.ProcessMemory(pid), bias,
// callstack.RegsFromPtrace(regs)) (ptrace). It returns the stack and
// the table it was symbolized with (the decider asks the table
// Where), or an error: no stack, and the messages say what they said
// without one.
type StackReader interface {
	Stack() (*callstack.Stack, *callstack.Table, error)
}

// StackOf asks t for its caller's stack, if t can tell: nil when t is
// not a StackReader, or the read failed, or gave no frame.
func StackOf(t Task) (*callstack.Stack, *callstack.Table) {
	sr, ok := t.(StackReader)
	if !ok {
		return nil, nil
	}
	s, tab, err := sr.Stack()
	if err != nil || s == nil || tab == nil || len(s.Frames) == 0 {
		return nil, nil
	}
	return s, tab
}

// ChainReader is what a Task may also do: read the chain of goroutines
// that created the calling one (package ancestry), while the call still
// waits. A decider asks for it as for the stack: for a denied or
// audited call whose stack shows no test's own goroutine, at most once.
type ChainReader interface {
	Chain() (*ancestry.Chain, error)
}

// ChainOf asks t for its caller's chain of creators. The error wraps
// ancestry.ErrUnsupported when t cannot read chains at all (not a
// ChainReader, a program whose goroutines are not readable); any other
// error is a read that failed this time (the caller left the call, its
// process exited).
func ChainOf(t Task) (*ancestry.Chain, error) {
	cr, ok := t.(ChainReader)
	if !ok {
		return nil, ancestry.ErrUnsupported
	}
	return cr.Chain()
}
