package plainthread

import "runtime"

// Run runs f on a goroutine of its own, locked to its thread, and waits
// for it: a plain thread (see the package comment).
func Run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
	}()
	<-done
}
