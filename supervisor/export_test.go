package supervisor

import "time"

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
	p := newCallerPool()
	return p.canSwitch, p.canChroot, p.err
}
