// Package plainthread runs work on a plain thread: one whose
// credentials, root and namespaces are nettrap's as it started.
//
// Some of nettrap's threads are not like the others: the capability-free
// one (internal/capless) and the caller threads (internal/caller) change
// their own credentials, root or namespaces, and each stays locked to its
// goroutine for life. Any of them may be the thread-group leader, which is
// what /proc/self shows, and the caller of Run may be locked to one. A new
// goroutine runs on none of them (a locked thread runs only its own
// goroutine), so /proc/thread-self read in the function Run runs shows
// nettrap as it started.
package plainthread
