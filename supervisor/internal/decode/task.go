package decode

import (
	"sync"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// task is the supervisor's Task: it reads /proc and borrows the caller's
// socket on first use only, and remembers the answers for the call.
type task struct {
	c          *Call
	callerOnce sync.Once
	caller     decision.Caller
	sockOnce   sync.Once
	sock       string
	treeOnce   sync.Once
	tree       bool
	heldOnce   sync.Once
	hold       held // the caller's table and registers (stack.go)
}

// Bind makes c a call held by h, of a command started in ns, with
// allowed calls made by nettrap if emulating; its Task is the
// supervisor's.
func (c *Call) Bind(h Holder, ns *namespace.Starting, emulating bool) {
	c.Holder, c.Netns, c.Emulating = h, ns, emulating
	c.task.c = c
	c.Task = &c.task
}

// Pending implements Task.
// A traced caller stays in its stop until the tracer resumes it: it is
// pending while it exists.
func (t *task) Pending() bool {
	return t.c.Pending()
}

// Caller implements Task. The task is gone when the notification is no
// longer pending after the reads: its tid may have been reused.
func (t *task) Caller() decision.Caller {
	t.callerOnce.Do(func() {
		tid := t.c.TID
		p, err := procfs.ProcessOf(tid)
		t.caller = decision.Caller{PID: p.PID, TID: tid, Exe: p.Exe, Argv: p.Argv, Gone: err != nil}
		if len(p.Argv) > 0 {
			t.caller.Argv0 = p.Argv[0]
		}
		if !t.Pending() {
			t.caller.Gone = true
		}
	})
	return t.caller
}

// SockType implements Task.
func (t *task) SockType() string {
	t.sockOnce.Do(func() {
		c := t.c
		switch c.Syscall.Kind {
		case bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg:
			if !c.Syscall.Foreign {
				t.sock = sockdiag.SocketType(t.Caller().PID, c.TID, int(int32(c.Args[0])))
			}
		case bpf.Socket:
			t.sock = sockdiag.SocketTypeName(c.Socket.Domain, c.Socket.Type, c.Socket.Protocol)
		}
	})
	return t.sock
}

// PathExists implements Task.
func (t *task) PathExists(path string) bool {
	return procfs.PathExists(t.c.TID, path)
}

// TreeNetns implements Task. A yes binds the call: it is allowed only as
// a call nettrap makes itself on a socket of the tree's (supervisor/emulate.go).
func (t *task) TreeNetns() bool {
	t.treeOnce.Do(func() {
		t.tree = t.c.treeNetns() && t.c.Pending()
		t.c.InTree = t.tree
	})
	return t.tree
}
