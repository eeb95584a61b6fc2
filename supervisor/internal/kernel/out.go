package kernel

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
)

// allowOut lets the socket cookie reach dest past the backstop, where
// dest is another host's: an allowed destination's packets leave by a
// device other than lo.
func (e *Engine) allowOut(cookie uint64, dest netip.Addr) {
	if classify.ClassifyAddr(dest) == classify.Loopback {
		return
	}
	if err := e.back.Allow(cookie, dest); err != nil {
		e.cfg.Errs.Add(fmt.Errorf("kernel engine: %w", err))
	}
}

// AllowedOut is the emulator's word, before it makes an allowed connect
// or send on its copy fd of the caller's socket, that the socket may
// reach dests: the backstop lets their packets out.
func (e *Engine) AllowedOut(fd int, dests []classify.Dest) {
	var cookie uint64
	for _, d := range dests {
		if d.Family != unix.AF_INET && d.Family != unix.AF_INET6 || classify.ClassifyAddr(d.Addr.Addr()) == classify.Loopback {
			continue
		}
		if cookie == 0 {
			c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
			if err != nil {
				e.cfg.Errs.Add(fmt.Errorf("kernel engine: %w", os.NewSyscallError("getsockopt(SO_COOKIE)", err)))
				return
			}
			cookie = c
		}
		e.allowOut(cookie, d.Addr.Addr())
	}
}

// serveDrops reads the backstop's reports until the engine stops. A packet
// sent from a task's call is decided as that call would be, for the
// record (it is gone already): a denial fails the test that sent it; an
// allowed destination lets the socket's next packets out.
func (e *Engine) serveDrops(rd *ringbuf.Reader) error {
	for {
		rec, err := cgroupbpf.Next(rd, &e.stopping)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		d, err := cgroupbpf.ParseDropped(rec.RawSample)
		if err != nil {
			return err
		}
		if d.PID == 0 || d.PID == os.Getpid() {
			continue // no task's call: a timer's, or nettrap's own
		}
		e.deciding.Add(1)
		go e.decideDrop(d)
	}
}

// decideDrop records one dropped packet through the decider.
func (e *Engine) decideDrop(d cgroupbpf.Dropped) {
	defer e.deciding.Done()
	family := uint16(unix.AF_INET)
	if !d.Dest.Is4() {
		family = unix.AF_INET6
	}
	c := &decision.Call{ID: e.ids.Add(1), TID: d.TID, Syscall: bpf.Lookup(nativeAudit, unix.SYS_SENDMSG),
		Dests: []classify.Dest{{Family: family, Addr: netip.AddrPortFrom(d.Dest, 0)}}}
	c.Args[0] = ^uint64(0)
	switch {
	case d.Why == cgroupbpf.DropOptions:
		c.SourceRoute = true
	case classify.ClassifyAddr(d.Dest) == classify.Loopback:
		c.Pin = fmt.Sprintf("ifindex %d", d.Ifindex)
	}
	c.Task = &dropTask{tid: d.TID, pid: d.PID}
	e.cfg.Stats.Notifications.Add(1)
	e.cfg.Stats.Denied.Add(1)
	if a := e.ask(c); a.Allowed() && !c.SourceRoute && c.Pin == "" {
		e.allowOut(d.Cookie, d.Dest)
	}
}

// dropTask is a dropped packet's sender, which has left its call: no
// stack, no chain.
type dropTask struct{ tid, pid int }

func (t *dropTask) Caller() decision.Caller {
	p, err := procfs.ProcessOf(t.tid)
	c := decision.Caller{PID: t.pid, TID: t.tid, Exe: p.Exe, Argv: p.Argv, Gone: err != nil}
	if len(p.Argv) > 0 {
		c.Argv0 = p.Argv[0]
	}
	return c
}
func (t *dropTask) SockType() string            { return "" }
func (t *dropTask) PathExists(path string) bool { return procfs.PathExists(t.tid, path) }
func (t *dropTask) Pending() bool               { return unix.Tgkill(t.pid, t.tid, 0) == nil }
func (t *dropTask) TreeNetns() bool             { return false }
