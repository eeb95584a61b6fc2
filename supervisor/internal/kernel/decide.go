package kernel

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
)

// decide asks the decider about one held call and writes its verdict.
func (e *Engine) decide(h cgroupbpf.Held) {
	defer e.deciding.Done()
	e.cfg.Stats.Notifications.Add(1)
	c := e.callOf(h)
	a := e.ask(c)
	v, done := verdictOf(a, h)
	if v == cgroupbpf.Allow() {
		e.allowOut(h.Cookie, h.Dest.Addr().Unmap())
	}
	if err := e.hold.Decide(h, v); err != nil {
		e.cfg.Errs.Add(fmt.Errorf("kernel engine: %w", err))
	}
	if a.Allowed() && v == cgroupbpf.Allow() {
		e.cfg.Stats.Allowed.Add(1)
	} else {
		e.cfg.Stats.Denied.Add(1)
	}
	if done != nil {
		done()
	}
}

// ask asks the decider, and fails the call closed if it panics.
func (e *Engine) ask(c *decision.Call) (a decision.Answer) {
	defer func() {
		if r := recover(); r != nil {
			e.cfg.Errs.Add(fmt.Errorf("decider panicked on %s: %v", c.Syscall.Name, r))
			a = decision.Deny(unix.EPERM)
		}
	}()
	return e.cfg.Decider.Decide(c)
}

// callOf is h as a decider reads a call: the system call the caller is
// in, its one destination.
func (e *Engine) callOf(h cgroupbpf.Held) *decision.Call {
	family := uint16(unix.AF_INET)
	if !h.Dest.Addr().Is4() {
		family = unix.AF_INET6
	}
	c := &decision.Call{ID: e.ids.Add(1), TID: h.TID, Syscall: bpf.Lookup(nativeAudit, int32(h.Nr)),
		Dests: []classify.Dest{{Family: family, Addr: h.Dest}}}
	c.Args[0] = ^uint64(0) // the descriptor is not known: the socket is (h.Cookie)
	c.Task = &task{e: e, h: h}
	return c
}

// verdictOf is what the program is told for answer a, and what to call
// once it has been told (a redirect's Done). An answer that needs
// nettrap to make the call itself (a peer check, under --sealed, which
// this engine does not serve) is a denial.
func verdictOf(a decision.Answer, h cgroupbpf.Held) (cgroupbpf.Verdict, func()) {
	switch {
	case a.Allowed() && a.Peer() == nil:
		return cgroupbpf.Allow(), nil
	case a.Allowed():
		return cgroupbpf.Deny(unix.EPERM), nil
	}
	r := a.Redirect()
	if r == nil {
		return cgroupbpf.Deny(a.Errno()), nil
	}
	to, local, ok := redirected(r, h)
	if !ok {
		return cgroupbpf.Deny(a.Errno()), func() { r.Done(netip.AddrPort{}, false) }
	}
	return cgroupbpf.RedirectTo(to), func() { r.Done(local, true) }
}

// redirected is where a redirected send goes, in the program's family,
// and where the stand-in sees it come from. A connect's is refused: its
// socket has no source yet (only a Fast Open sendto reaches the connect
// programs here; a connect(2) is the notify engine's).
func redirected(r *decision.Redirect, h cgroupbpf.Held) (to, local netip.AddrPort, ok bool) {
	if h.Nr == unix.SYS_CONNECT || h.Type != unix.SOCK_DGRAM || h.Source.Port() == 0 {
		return to, local, false
	}
	v4 := h.Dest.Addr().Is4() || h.Dest.Addr().Is4In6()
	to = r.To6
	if v4 {
		to = r.To4
	}
	if !to.IsValid() {
		return to, local, false
	}
	src := netip.IPv6Loopback()
	if v4 {
		src = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		if a := h.Source.Addr(); h.Dest.Addr().Is4() && !a.IsUnspecified() {
			src = a
		}
	}
	if !h.Dest.Addr().Is4() && to.Addr().Is4() {
		// An IPv6 socket's program takes the address v4-mapped.
		to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
	}
	return to, netip.AddrPortFrom(src, h.Source.Port()), true
}
