package supervisor

import "runtime"

// plainThread runs f on a goroutine of its own, locked to its thread,
// and waits for it.
//
// Some of nettrap's threads are not like the others: the capability-free
// one (internal/capless) and the caller threads (emucaller.go) change their own
// credentials, root or namespaces, and each stays locked to its goroutine
// for life. Any of them may be the thread-group leader, which is what
// /proc/self shows, and the caller of plainThread may be locked to one.
// A new goroutine runs on none of them (a locked thread runs only its own
// goroutine), so /proc/thread-self read in f shows nettrap as it started.
func plainThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
	}()
	<-done
}
