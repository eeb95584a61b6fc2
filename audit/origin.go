package audit

import (
	"strconv"
	"strings"
)

// Origin is what the caller's stack told of a denied or audited
// attempt (package callstack, read while the call waited): where in the
// user's code it was made, and which test's code started the goroutine.
// Empty when no stack could be read: the record then says what it said
// before (the test that was running).
type Origin struct {
	// Where is the innermost frame in the module under test, its file
	// relative to the module's root when that is known.
	Where *Frame `json:"where,omitempty"`
	// CalledFrom is the frame of a test function's code (the test, a
	// closure of it) the call came through, when Where is not in it
	// (a helper); for a goroutine StartedBy names, the frame of that
	// test's code.
	CalledFrom *Frame `json:"called_from,omitempty"`
	// Goroutine is the goroutine's entry function when the goroutine is
	// not a test's own (a go statement's function).
	Goroutine string `json:"goroutine,omitempty"`
	// StartedBy is the test that started the goroutine, when that is
	// not the test that was running (Test, or one of Candidates): a
	// goroutine it left running, or one a goroutine it started left
	// running. The verdict goes to it. It rests on the goroutine's
	// chain of creators (the nearest that is a test's own goroutine,
	// package ancestry), never on a closure's name (Unowned; earlier
	// versions set it from one: their records may have it).
	StartedBy string `json:"started_by,omitempty"`
	// StartedByEnded tells that StartedBy had ended when the attempt
	// came: the verdict fails the package, naming it.
	StartedByEnded bool `json:"started_by_ended,omitempty"`
	// Unowned tells that no running test is known to have started the
	// calling goroutine: its creators reach no test's goroutine (a
	// worker started in init), or, where they cannot be read, its test
	// code is only another test's (TestA's closure, by its name,
	// TestA.func1), which says where the code was written, not who
	// started the goroutine. No test is named as its starter: the line
	// names the goroutine's entry function (and CreatedIn), and the
	// package carries the verdict.
	Unowned bool `json:"unowned,omitempty"`
	// WhereStarted tells that Where is not on the calling goroutine's
	// stack, which holds no frame of the module, but on the stack of
	// the goroutine that started it (directly or through goroutines of
	// libraries): a test's own line for a dial that net's parallel
	// dialer makes in a goroutine of its own.
	WhereStarted bool `json:"where_started,omitempty"`
	// CreatedIn are the functions whose go statements started the
	// calling goroutine and its creators, nearest first, as far as the
	// runtime showed them: what is known of a goroutine that no running
	// test is known to have started (Unowned).
	CreatedIn []string `json:"created_in,omitempty"`
	// Left tells that the caller left the call before nettrap could
	// read who made it (a signal interrupted it while its process
	// lives): the kernel makes the call again, and that call is judged;
	// this record fails nothing.
	Left bool `json:"left_the_call,omitempty"`
	// ChainStop says why the calling goroutine's creators could not be
	// read, in a program whose creators nettrap reads (the caller left
	// the call, its process exited as it made it): with no evidence of
	// who made the call, it is Unowned.
	ChainStop string `json:"chain_stop,omitempty"`
	// Stack is the whole stack, innermost first, as far as it was
	// verified (files as the binary names them).
	Stack []Frame `json:"stack,omitempty"`
	// StackStop says why the walk ended before the goroutine's start,
	// when it did (a frame it could not verify, C code): the frames
	// beyond are unknown. Empty for a whole stack.
	StackStop string `json:"stack_stop,omitempty"`
}

// Frame is one frame of a stack: the function (with its full import
// path), its file and line.
type Frame struct {
	Func string `json:"func"`
	File string `json:"file"`
	Line int    `json:"line"`
}

// Loc is "file.go:LINE".
func (f Frame) Loc() string { return f.File + ":" + strconv.Itoa(f.Line) }

// ShortFunc is the function with the last element of its import path:
// "prices.(*Client).Get" for "example.com/shop/prices.(*Client).Get".
func (f Frame) ShortFunc() string {
	name := f.Func
	slash := strings.LastIndexByte(name, '/')
	if b := strings.IndexByte(name, '['); b >= 0 && b < slash {
		slash = strings.LastIndexByte(name[:b], '/')
	}
	return name[slash+1:]
}

// Blamed is the test a verdict on the record goes to: StartedBy when
// the stack showed another test's goroutine, else Test.
func (r Record) Blamed() string {
	if r.StartedBy != "" {
		return r.StartedBy
	}
	return r.Test
}

// wherePart says where the attempt was made, from the stack and the
// goroutine's creators:
//
//	at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:48)
//	at dial_test.go:12 (where.TestDial), in a goroutine of net.(*sysDialer).dialParallel.func1 started there
//	at prices/client.go:31 (prices.fetchQuote), from a goroutine started by TestA at prices/leak_test.go:12, which had ended
//	at prices/leak_test.go:14 (leak.TestA.func1), in a goroutine of leak.TestA.func1 that no running test is known to have started
//	, in a goroutine of up.(*Probe).Do.func1 (started in up.(*Probe).Do) that no running test is known to have started
//	, in a goroutine of http.(*Transport).startDialConnForLocked.func1
//
// The second: WhereStarted. The fourth and fifth: Unowned. The last:
// no frame of the module and no creator read, a library's goroutine.
// "" without a stack. Files are the record's, relative to the module's
// root: one form, whether or not they share a directory.
func wherePart(o Origin) string {
	if o.Where == nil {
		if o.Goroutine == "" && o.Unowned {
			// No stack, or no chain, of the test binary's call.
			return ", whose stack nettrap could not read (the caller left the call, or exited as it made it): no running test is known to have made it"
		}
		if o.Goroutine == "" {
			return ""
		}
		// A complete stack with no frame of the module: a library's
		// goroutine (net/http's Transport dials in its own).
		part := ", in a goroutine of " + Frame{Func: o.Goroutine}.ShortFunc() + createdPart(o)
		if o.Unowned {
			part += " that no running test is known to have started"
		}
		return part
	}
	inner := o.Where.ShortFunc()
	var after string
	switch {
	case o.Unowned:
		if o.CalledFrom != nil {
			inner += ", called from " + o.CalledFrom.Loc()
		}
		after = ", in a goroutine"
		if o.Goroutine != "" {
			after += " of " + Frame{Func: o.Goroutine}.ShortFunc()
		}
		if o.WhereStarted {
			after += " started there"
		} else {
			after += createdPart(o)
		}
		after += " that no running test is known to have started"
	case o.StartedBy != "":
		if o.WhereStarted && o.Goroutine != "" {
			after = ", in a goroutine of " + Frame{Func: o.Goroutine}.ShortFunc() + " started there"
		}
		after += ", from a goroutine started by " + o.StartedBy
		if o.CalledFrom != nil && *o.CalledFrom != *o.Where {
			after += " at " + o.CalledFrom.Loc()
		}
		if o.StartedByEnded {
			after += ", which had ended"
		}
	case o.WhereStarted:
		if o.CalledFrom != nil {
			inner += ", called from " + o.CalledFrom.Loc()
		}
		after = ", in a goroutine"
		if o.Goroutine != "" {
			after += " of " + Frame{Func: o.Goroutine}.ShortFunc()
		}
		after += " started there"
	case o.CalledFrom != nil:
		inner += ", called from " + o.CalledFrom.Loc()
		if o.Goroutine != "" {
			inner += " in a goroutine"
		}
	case o.Goroutine != "":
		inner += ", in a goroutine of " + Frame{Func: o.Goroutine}.ShortFunc()
	}
	return " at " + o.Where.Loc() + " (" + inner + ")" + after
}

// createdPart names the functions whose go statements started the
// goroutine and its creators: " (started in up.(*Probe).Do ←
// up.(*Probe).Start)"; "" when none is known.
func createdPart(o Origin) string {
	if len(o.CreatedIn) == 0 {
		return ""
	}
	names := make([]string, len(o.CreatedIn))
	for i, fn := range o.CreatedIn {
		names[i] = Frame{Func: fn}.ShortFunc()
	}
	return " (started in " + strings.Join(names, " ← ") + ")"
}

// FramesText is frames as the lines under a verdict with -v or -json:
// one frame a line, "file.go:LINE (pkg.Func)", each starting with a
// newline (the renderer indents them under the verdict); a zero Frame,
// frames left out, is "...". "" for no frames. The frames are a few of
// the module's (guard chooses them); the whole stack is the record's.
func FramesText(frames []Frame) string {
	var b strings.Builder
	for _, f := range frames {
		if f == (Frame{}) {
			b.WriteString("\n...")
			continue
		}
		b.WriteString("\n" + f.Loc() + " (" + f.ShortFunc() + ")")
	}
	return b.String()
}
