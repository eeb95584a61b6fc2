// Package procfs reads the few facts nettrap needs about other processes
// from /proc: a process's parent, and whether one process descends from
// another.
package procfs
