package kernel

import (
	"fmt"
	"net/netip"
	"os"

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
	if v == cgroupbpf.Allow() && !h.Unix {
		e.allowOut(h.Cookie, h.Dest.Addr().Unmap())
	}
	// A redirect's stand-in is told the source before the caller is let
	// go: its query may arrive at once.
	if done != nil {
		done()
	}
	if err := e.hold.Decide(h, v); err != nil {
		e.cfg.Errs.Add(fmt.Errorf("kernel engine: %w", err))
	}
	if a.Allowed() && v == cgroupbpf.Allow() {
		e.cfg.Stats.Allowed.Add(1)
	} else {
		e.cfg.Stats.Denied.Add(1)
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
	c := &decision.Call{ID: e.ids.Add(1), TID: h.TID, Syscall: bpf.Lookup(nativeAudit, int32(h.Nr)),
		Dests: []classify.Dest{destOf(h)}}
	c.Args[0] = ^uint64(0) // the descriptor is not known: the socket is (h.Cookie)
	c.Task = &task{e: e, h: h}
	return c
}

// destOf is h's destination as the notify engine reads one from the
// caller's memory; a unix one from the kernel's copy the program
// reported, read by classify as it reads an address.
func destOf(h cgroupbpf.Held) classify.Dest {
	if !h.Unix {
		family := uint16(unix.AF_INET)
		if !h.Dest.Addr().Is4() {
			family = unix.AF_INET6
		}
		return classify.Dest{Family: family, Addr: h.Dest}
	}
	op := classify.OpSend
	if h.Nr == unix.SYS_CONNECT {
		op = classify.OpConnect
	}
	d, err := classify.Parse(append([]byte{unix.AF_UNIX, 0}, h.SunPath...), op)
	if err != nil {
		// Never seen: the kernel checked the address before the program.
		return classify.Dest{Family: unix.AF_UNIX, Path: h.SunPath}
	}
	return d
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
	if local.Port() != 0 {
		return cgroupbpf.RedirectTo(to), func() { r.Done(local, true) }
	}
	// A connect on a socket with no port yet: bound to a free one first.
	port, err := freePort(h.Type, local.Addr())
	if err != nil {
		return cgroupbpf.Deny(a.Errno()), func() { r.Done(netip.AddrPort{}, false) }
	}
	local = netip.AddrPortFrom(local.Addr(), port)
	from := local
	if !h.Dest.Addr().Is4() && local.Addr().Is4() {
		from = netip.AddrPortFrom(netip.AddrFrom16(local.Addr().As16()), port)
	}
	return cgroupbpf.RedirectFrom(to, from), func() { r.Done(local, true) }
}

// freePort is a port no socket of typ holds on addr now, in nettrap's
// network namespace (the tree's socket's: one in a namespace of the
// tree's own is no DNS attempt): the port of a socket bound to port 0
// there, closed again.
func freePort(typ int, addr netip.Addr) (uint16, error) {
	domain := unix.AF_INET6
	var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: addr.As16()}
	if addr.Is4() {
		domain, sa = unix.AF_INET, &unix.SockaddrInet4{Addr: addr.As4()}
	}
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, sa); err != nil {
		return 0, os.NewSyscallError("bind", err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return 0, os.NewSyscallError("getsockname", err)
	}
	switch got := got.(type) {
	case *unix.SockaddrInet4:
		return uint16(got.Port), nil
	case *unix.SockaddrInet6:
		return uint16(got.Port), nil
	}
	return 0, fmt.Errorf("getsockname: %T", got)
}

// redirected is where a redirected call goes, in the program's family,
// and where the stand-in sees it come from: a source with port 0 for a
// connect on a socket with no port yet, which the program binds first.
// A Fast Open sendto's redirect is refused (it is a connect and a send
// at once, with no source to tell).
func redirected(r *decision.Redirect, h cgroupbpf.Held) (to, local netip.AddrPort, ok bool) {
	connect := h.Nr == unix.SYS_CONNECT
	if h.Unix || !connect && (h.Type != unix.SOCK_DGRAM || h.Source.Port() == 0) {
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
		if a := h.Source.Addr(); h.Dest.Addr().Is4() && a.IsValid() && !a.IsUnspecified() {
			src = a
		}
	}
	if !h.Dest.Addr().Is4() && to.Addr().Is4() {
		// An IPv6 socket's program takes the address v4-mapped.
		to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
	}
	return to, netip.AddrPortFrom(src, h.Source.Port()), true
}
