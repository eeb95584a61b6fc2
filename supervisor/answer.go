package supervisor

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
)

// The answer path both engines share. Each engine first takes the steps
// only it can (the notify engine hands descriptors in with ADDFD, the
// ptrace engine makes the tracee call for itself), then asks settle what
// an allowed or redirected call becomes, and answers the kernel its own
// way: a notification response, or a skipped or resumed stop.

// outcome is what settle made of a decided call.
type outcome int

const (
	// carryOn: nothing was made. The engine lets an allowed call run in
	// the kernel, or fails a denied one with its errno (a redirect that
	// could not be made has been told so).
	carryOn outcome = iota
	// answered: the result is the call's answer (a refusal, or a
	// redirect made to its stand-in).
	answered
	// emulated: answered, with the result of the call nettrap made.
	emulated
	// wouldBlock: the call may block for long and mayBlock was false:
	// nothing was made; settle it again where it may block.
	wouldBlock
)

// settle carries out what an answer asks beyond allow and deny: an
// allowed call that emulation can take is made by nettrap (so the kernel
// never reads its address or descriptor again); one whose peers must be
// checked is made by nettrap or refused, never continued; a denied call
// with a stand-in is made to the stand-in. emu is nil when allowed calls
// continue in the kernel.
func settle(emu *emulate.Emulator, c *emulate.Call, a decision.Answer, mayBlock bool, report func(error)) (emulate.Result, outcome) {
	canEmulate := emu != nil && emulate.Emulable(c)
	if !a.Allowed() {
		rd := a.Redirect()
		switch {
		case rd == nil:
			return emulate.Result{}, carryOn
		case !canEmulate:
			rd.Done(netip.AddrPort{}, false)
			return emulate.Result{}, carryOn
		}
		val, errno := emu.Redirect(c, a)
		return emulate.Result{Val: val, Errno: errno}, answered
	}
	if !canEmulate {
		if a.Peer() != nil {
			report(fmt.Errorf("allowed %s by pid %d denied: %w", c.Syscall.Name, c.TID, emulate.ErrPeerUnchecked))
			return emulate.Result{Errno: unix.EPERM}, answered
		}
		return emulate.Result{}, carryOn
	}
	c.Peer = a.Peer()
	r, done, blocks := emu.Make(c, mayBlock)
	switch {
	case blocks:
		return emulate.Result{}, wouldBlock
	case done:
		return r, emulated
	case c.Peer != nil:
		return emulate.Result{Errno: unix.EPERM}, answered // never continued unchecked
	}
	return emulate.Result{}, carryOn
}
