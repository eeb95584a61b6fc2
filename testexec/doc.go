// Package testexec wraps the Go test binaries the go command starts, so
// that `nettrap -- go test` needs no -exec (which turns Go's test cache
// off; golang/go#27207).
//
// The outer nettrap confines the go command's whole tree with a filter
// that also traps execve and execveat (bpf.Options.Exec). When a direct
// child of the go command (its pre-exec vfork child) is about to exec a
// test binary in the go command's work directory, Decider renames the
// binary to NAME.test.nettrap-real and puts a symlink to nettrap's own
// executable at its path, then lets the exec continue: the go command
// runs nettrap with the test binary's argv. That nettrap (Wrapped) runs
// the real binary as an inner nettrap of the outer's hub, exactly as
// under -exec, and puts the binary back (Restore) before it exits.
//
// The go command computed the test's cache key from the build before it
// started the binary, and it passes -test.testlogfile only when there is
// no -exec: so the swap changes nothing the cache depends on, and the
// test log, written by the real binary, lists the real inputs. A pass
// that must not be cached (an attempt was recorded) is spoiled by
// emptying the test log (Uncache): the go command then prints "ok" but
// stores nothing.
//
// Every file operation is relative to a descriptor of the binary's
// directory, opened without following a symlink, and never follows the
// last component (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, RENAME_NOREPLACE):
// a process of the tree that replaces the directory or the binary with a
// symlink cannot make nettrap rename or overwrite a file elsewhere.
package testexec
