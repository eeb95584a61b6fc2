// Package pidfds is the emulator's cache of pidfds, one per calling
// thread id (Cache): a pidfd_getfd on a cached pidfd spares a pidfd_open
// and a close per emulated call.
package pidfds
