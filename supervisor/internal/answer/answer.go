package answer

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

// Outcome is what Settle made of a decided call.
type Outcome int

const (
	// CarryOn: nothing was made. The engine lets an allowed call run in
	// the kernel, or fails a denied one with its errno (a redirect that
	// could not be made has been told so).
	CarryOn Outcome = iota
	// Answered: the result is the call's answer (a refusal, or a
	// redirect made to its stand-in).
	Answered
	// Emulated: answered, with the result of the call nettrap made.
	Emulated
	// WouldBlock: the call may block for long and mayBlock was false:
	// nothing was made; settle it again where it may block.
	WouldBlock
)

// Settle carries out what an answer asks beyond allow and deny: an
// allowed call that emulation can take is made by nettrap (so the kernel
// never reads its address or descriptor again); one whose peers must be
// checked is made by nettrap or refused, never continued; a denied call
// with a stand-in is made to the stand-in. emu is nil when allowed calls
// continue in the kernel.
func Settle(emu *emulate.Emulator, c *emulate.Call, a decision.Answer, mayBlock bool, report func(error)) (emulate.Result, Outcome) {
	canEmulate := emu != nil && emulate.Emulable(c)
	if !a.Allowed() {
		rd := a.Redirect()
		switch {
		case rd == nil:
			return emulate.Result{}, CarryOn
		case !canEmulate:
			rd.Done(netip.AddrPort{}, false)
			return emulate.Result{}, CarryOn
		}
		val, errno := emu.Redirect(c, a)
		return emulate.Result{Val: val, Errno: errno}, Answered
	}
	if !canEmulate {
		if a.Peer() != nil {
			report(fmt.Errorf("allowed %s by pid %d denied: %w", c.Syscall.Name, c.TID, emulate.ErrPeerUnchecked))
			return emulate.Result{Errno: unix.EPERM}, Answered
		}
		return emulate.Result{}, CarryOn
	}
	c.Peer = a.Peer()
	r, done, blocks := emu.Make(c, mayBlock)
	switch {
	case blocks:
		return emulate.Result{}, WouldBlock
	case done:
		return r, Emulated
	case c.Peer != nil:
		return emulate.Result{Errno: unix.EPERM}, Answered // never continued unchecked
	}
	return emulate.Result{}, CarryOn
}

// Decide asks d, and fails the call closed if d panics: a bug in a
// policy must never let a call through nor hang the target.
func Decide(d decision.Decider, report func(error), c *emulate.Call) (a decision.Answer) {
	defer func() {
		if r := recover(); r != nil {
			report(fmt.Errorf("decider panicked on %s: %v", c.Syscall.Name, r))
			a = decision.Deny(unix.EPERM)
		}
	}()
	if c.Err != 0 {
		// Unreadable or malformed arguments: the decider still sees the
		// call (to audit it), but cannot turn it into an allow.
		d.Decide(&c.Call.Call)
		return decision.Deny(c.Err)
	}
	return d.Decide(&c.Call.Call)
}
