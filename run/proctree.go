package run

import (
	"syscall"

	"github.com/nettrap/nettrap/procfs"
)

// signalTree sends sig to pid and to all its descendants. Descendants
// first, so that a parent that reacts to the signal does not see its
// children's status before they got it too.
func signalTree(pid int, sig syscall.Signal) {
	for _, d := range procfs.Descendants(pid) {
		syscall.Kill(d, sig)
	}
	syscall.Kill(pid, sig)
}
