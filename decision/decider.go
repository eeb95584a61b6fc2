package decision

// Decider decides intercepted calls. It may be called from several
// goroutines at once and must be safe for that. It may block (for instance
// to drain a test's output first), but every moment it takes is a moment
// the calling thread waits, and past a millisecond or two another
// goroutine takes over receiving the other threads' calls.
type Decider interface {
	Decide(c *Call) Answer
}

// QuickDecider is a Decider that tells which calls it decides without
// waiting on anything a confined process could hold up (an inner nettrap
// asked which test runs). The ptrace engine decides those on its tracer
// thread, and the others on another goroutine, so that the tracer serves
// the confined processes' stops meanwhile. A Decider that does not
// implement it is asked on another goroutine always: a decorator
// (testexec's) must pass Quick on.
type QuickDecider interface {
	Decider
	// Quick is called before Decide, and must not wait.
	Quick(c *Call) bool
}

// QuickFunc adapts a function that never waits on a confined process to
// a QuickDecider whose every call is quick.
type QuickFunc func(c *Call) Answer

// Decide calls f.
func (f QuickFunc) Decide(c *Call) Answer { return f(c) }

// Quick is always true.
func (f QuickFunc) Quick(*Call) bool { return true }

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(c *Call) Answer

// Decide calls f.
func (f DeciderFunc) Decide(c *Call) Answer { return f(c) }
