// Package rawsock makes the socket calls of an emulated call raw: the
// checked address and control bytes go to the kernel as they are, whatever
// the family (which x/sys/unix's typed wrappers cannot do), and the quick
// questions (pidfd_getfd, F_GETFL, SO_TYPE, SO_SNDTIMEO) skip the Go
// scheduler and allocate nothing.
package rawsock
