package notify

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// TestLostAnswers: a lost answer is replayed only to the same thread's
// next call with the same syscall and arguments, once; any other call
// drops it.
func TestLostAnswers(t *testing.T) {
	const tid = 4242
	auditArch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		auditArch = unix.AUDIT_ARCH_AARCH64
	}
	notif := func(pid uint32, nr int32, args [6]uint64) *unotify.Notif {
		n := &unotify.Notif{PID: pid}
		n.Data.Arch, n.Data.Nr, n.Data.Args = auditArch, nr, args
		return n
	}
	args := [6]uint64{3, 0x1000, 4, 0, 0x2000, 16}
	first := notif(tid, unix.SYS_SENDTO, args)
	c := &emulate.Call{}
	c.TID, c.Args, c.Syscall = tid, args, bpf.Lookup(first.Data.Arch, first.Data.Nr)
	var k lostAnswers
	keep := func() { k.keep(c, &unotify.Resp{Val: 4}) }

	keep()
	if la, ok := k.take(first); !ok || la.val != 4 {
		t.Errorf("the restart of the call: %+v %v, want its answer 4", la, ok)
	}
	if _, ok := k.take(first); ok {
		t.Error("an answer replayed twice")
	}
	other := args
	other[2] = 5
	for _, n := range []*unotify.Notif{notif(tid, unix.SYS_SENDTO, other), notif(tid, unix.SYS_CONNECT, args), notif(tid+1, unix.SYS_SENDTO, args)} {
		keep()
		if _, ok := k.take(n); ok && n.PID == tid {
			t.Errorf("another call %+v took the answer", n.Data)
		}
		if n.PID == tid {
			if _, ok := k.take(first); ok {
				t.Errorf("the answer survived another call %+v of its thread", n.Data)
			}
		} else if _, ok := k.take(first); !ok {
			t.Error("another thread's call dropped the answer")
		}
	}
}

// TestEarlyAnswerNotSentAgain: an emulated call its watch answered early
// (a signal for the thread, emulate's emuintr.go) gets no second answer
// when the call nettrap made for it ends. The kernel takes one answer per
// notification: a second SEND failed with EINPROGRESS while the woken
// thread had not yet taken its notification off the list, which TCG
// guests showed as a supervisor error under TestRestartedConnect. The
// listener here is no descriptor, so a SEND would be reported (EBADF).
// Where calls restart, the result is kept for the restart, as one a
// signal took away; elsewhere it is dropped.
func TestEarlyAnswerNotSentAgain(t *testing.T) {
	const tid = 4242
	auditArch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		auditArch = unix.AUDIT_ARCH_AARCH64
	}
	args := [6]uint64{3, 0x1000, 16}
	n := &unotify.Notif{PID: tid}
	n.Data.Arch, n.Data.Nr, n.Data.Args = auditArch, unix.SYS_CONNECT, args
	for _, restarts := range []bool{false, true} {
		var errs errlog.Log
		l := &Engine{listener: -1, stats: new(answer.Stats), errs: &errs, restarts: restarts}
		c := &emulate.Call{}
		c.ID, c.TID, c.Args, c.Syscall = 7, tid, args, bpf.Lookup(n.Data.Arch, n.Data.Nr)
		l.sendEmulated(c, &unotify.Resp{ID: c.ID}, emulate.Result{AnsweredEarly: true})
		if e := errs.Take(); len(e) > 0 {
			t.Errorf("restarts %v: answered again: %v", restarts, e)
		}
		if la, ok := l.lost.take(n); ok != restarts || (ok && (la.val != 0 || la.errno != 0)) {
			t.Errorf("restarts %v: kept for the restart %v (%+v), want %v with the connect's 0", restarts, ok, la, restarts)
		}
	}
	// Without the early answer the same result is sent: EBADF here.
	var errs errlog.Log
	l := &Engine{listener: -1, stats: new(answer.Stats), errs: &errs}
	l.sendEmulated(&emulate.Call{}, &unotify.Resp{}, emulate.Result{})
	if len(errs.Take()) != 1 {
		t.Error("a call not answered early was not sent its answer")
	}
}
