package supervisor

import (
	"time"

	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/cmsgtest"
)

// Builders of control data, for the external tests that send it to the
// kernel.
var (
	Cmsg       = cmsgtest.Cmsg
	InPktinfo  = cmsgtest.InPktinfo
	In6Pktinfo = cmsgtest.In6Pktinfo
)

// DelayLoop delays the loop's goroutine of sessions started from now on.
func DelayLoop(d time.Duration) { testHookBeforeRun = func() { time.Sleep(d) } }

// CallerPoolCaps is what a new caller pool learns nettrap may do: switch
// credentials, and chroot.
func CallerPoolCaps() (canSwitch, canChroot bool, err error) {
	return ascaller.NewPool().Caps()
}

// NeedEntryStops is the ptrace engine's choice of entry stops from what
// its probes saw.
var NeedEntryStops = needEntryStops
