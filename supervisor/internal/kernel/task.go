package kernel

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// task is a held call's Task: the caller is in its call, looping in the
// kernel until the verdict, so its stack is the one the program saw.
type task struct {
	e          *Engine
	h          cgroupbpf.Held
	callerOnce sync.Once
	caller     decision.Caller
	tabOnce    sync.Once
	tab        *callstack.Table
	bias       uint64
	tabErr     error
}

// Caller implements decision.Task.
func (t *task) Caller() decision.Caller {
	t.callerOnce.Do(func() {
		p, err := procfs.ProcessOf(t.h.TID)
		t.caller = decision.Caller{PID: p.PID, TID: t.h.TID, Exe: p.Exe, Argv: p.Argv, Gone: err != nil || !t.Pending()}
		if len(p.Argv) > 0 {
			t.caller.Argv0 = p.Argv[0]
		}
	})
	return t.caller
}

// SockType implements decision.Task, from the socket's type and
// protocol as the program read them.
func (t *task) SockType() string {
	domain := unix.AF_INET6
	switch {
	case t.h.Unix:
		domain = unix.AF_UNIX
	case t.h.Dest.Addr().Is4():
		domain = unix.AF_INET
	}
	return sockdiag.SocketTypeName(domain, t.h.Type, t.h.Protocol)
}

// PathExists implements decision.Task.
func (t *task) PathExists(path string) bool { return procfs.PathExists(t.h.TID, path) }

// Pending implements decision.Task: the thread still exists. It loops in
// its call until the verdict or the deadline.
func (t *task) Pending() bool {
	return unix.Tgkill(t.h.PID, t.h.TID, 0) == nil
}

// TreeNetns implements decision.Task: the socket is of a network
// namespace other than the starting one, which only the tree can have
// made. The verdict is bound to the socket, whose namespace never
// changes.
func (t *task) TreeNetns() bool {
	ns := t.e.cfg.Netns
	return t.e.cfg.Tree && ns != nil && ns.Cookie != 0 && t.h.Netns != 0 && t.h.Netns != ns.Cookie
}

// table is the caller's executable's symbol table and load bias.
func (t *task) table() (*callstack.Table, uint64, error) {
	t.tabOnce.Do(func() {
		if t.tabErr = t.liveErr(); t.tabErr != nil {
			return
		}
		tab, err := decode.ExecTable(t.h.PID)
		if err != nil {
			t.tabErr = errors.Join(ancestry.ErrUnsupported, err)
			return
		}
		t.tab = tab
		t.bias, t.tabErr = tab.Bias(t.h.PID)
	})
	return t.tab, t.bias, t.tabErr
}

func (t *task) liveErr() error {
	if !t.Pending() {
		return errors.New("the caller left the call")
	}
	return nil
}

// Stack implements decision.StackReader: unwound from the registers the
// program reported.
func (t *task) Stack() (*callstack.Stack, *callstack.Table, error) {
	tab, bias, err := t.table()
	if err != nil {
		return nil, nil, err
	}
	regs := callstack.Regs{PC: t.h.PC, SP: t.h.SP, FP: t.h.FP, LR: t.h.LR}
	s := tab.Unwind(callstack.ProcessMemory(t.h.TID), bias, regs)
	if err := t.liveErr(); err != nil {
		return nil, nil, err
	}
	return s, tab, nil
}

// Chain implements decision.ChainReader: the goroutine whose stack holds
// the reported sp, and its creators.
func (t *task) Chain() (*ancestry.Chain, error) {
	tab, bias, err := t.table()
	if err != nil {
		return nil, err
	}
	l, err := decode.LayoutOf(tab)
	if err != nil {
		return nil, err
	}
	c, err := l.Read(callstack.ProcessMemory(t.h.TID), bias, t.h.SP)
	if err != nil {
		return nil, err
	}
	return c, t.liveErr()
}
