package supervisor

import (
	"time"

	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
)

// The internal tests' builders of control data, for the external tests
// that send it to the kernel.
var (
	Cmsg       = cmsg
	InPktinfo  = inPktinfo
	In6Pktinfo = in6Pktinfo
)

// DelayLoop delays the loop's goroutine of sessions started from now on.
func DelayLoop(d time.Duration) { testHookBeforeRun = func() { time.Sleep(d) } }

// CallerPoolCaps is what a new caller pool learns nettrap may do: switch
// credentials, and chroot.
func CallerPoolCaps() (canSwitch, canChroot bool, err error) {
	return ascaller.NewPool().Caps()
}
