package notify

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"

	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// Lost answers. Without SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (kernels
// before 5.19) a signal takes the target out of a call nettrap has
// received: if nettrap made the call already (emulated), its answer finds
// the notification gone (ENOENT), and the kernel restarts the call (a
// handler with SA_RESTART, as Go's), or the program makes it again after
// EINTR. Made a second time, a send would go out twice (a datagram
// twice, a stream's bytes twice) and a connect would say EISCONN. So the
// lost answer is kept for the thread, and the thread's next trapped call,
// if it comes with the same registers (number and arguments), is answered
// with it without being made again. Nothing is made on a replay, so a
// sockaddr changed in between reaches nothing. Any other call from the
// thread drops the kept answer.

// lostAnswer is the answer of an emulated call its thread left.
type lostAnswer struct {
	call  bpf.Call // the syscall, by ABI and name
	args  [6]uint64
	val   int64
	errno int32
}

// lostAnswers are the kept answers, by thread.
type lostAnswers struct {
	mu sync.Mutex
	m  map[int]lostAnswer
}

// keep records resp, the answer of emulated call c that found it gone.
func (k *lostAnswers) keep(c *emulate.Call, resp *unotify.Resp) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[int]lostAnswer{}
	}
	k.m[c.TID] = lostAnswer{call: c.Syscall, args: c.Args, val: resp.Val, errno: resp.Error}
}

// take returns the answer kept for n's thread if n is the same call
// again, and drops what was kept either way.
func (k *lostAnswers) take(n *unotify.Notif) (lostAnswer, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	la, ok := k.m[int(n.PID)]
	if !ok {
		return la, false
	}
	delete(k.m, int(n.PID))
	return la, la.call == bpf.Lookup(n.Data.Arch, n.Data.Nr) && la.args == n.Data.Args
}

// oneAtATime waits until no other call of n's thread is being handled,
// and marks n's as being handled; the returned func ends that. Only
// where calls restart: elsewhere a thread is in one call at a time.
func (l *Engine) oneAtATime(n *unotify.Notif) func() {
	if !l.restarts {
		return func() {}
	}
	done := make(chan struct{})
	for {
		prev, busy := l.busy.LoadOrStore(n.PID, done)
		if !busy {
			break
		}
		<-prev.(chan struct{})
	}
	return func() {
		l.busy.Delete(n.PID)
		close(done)
	}
}

// replay answers n with a lost answer kept for it; false when there is
// none. Only where calls restart.
func (l *Engine) replay(n *unotify.Notif) bool {
	if !l.restarts {
		return false
	}
	la, ok := l.lost.take(n)
	if !ok {
		return false
	}
	l.stats.Replayed.Add(1)
	resp := unotify.Resp{ID: n.ID, Val: la.val, Error: la.errno}
	if err := unotify.Send(l.listener, &resp); errors.Is(err, unix.ENOENT) {
		// Taken away again: kept for the next restart.
		l.stats.Vanished.Add(1)
		l.lost.mu.Lock()
		l.lost.m[int(n.PID)] = la
		l.lost.mu.Unlock()
	} else if err != nil {
		l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err))
	}
	return true
}

// sendEmulated sends resp, the answer of emulated call c whose result
// is r; one that finds the call gone is kept for its restart, where calls
// restart, unless unmade: nettrap found the call left before it made it
// (emulate.Result.Unmade), so its restart has nothing to be spared and
// is made afresh.
//
// A call its watch answered early (r.AnsweredEarly: a signal for the
// thread, emulate's emuintr.go) is not answered again: the kernel allows
// one answer per notification (seccomp_notify_send's "Allow exactly one
// reply": any state but SENT is EINPROGRESS), and the thread, woken by
// the early answer or by the signal, takes its notification off the
// list only when it runs again (seccomp_do_user_notification's
// list_del, under notify_lock): a second SEND before then failed with
// EINPROGRESS, which a slow machine (a TCG guest) showed; after, with
// ENOENT. The thread left the call with the early answer (or the
// signal's), so this result is a lost one, kept for the restart as one
// that found the call gone.
func (l *Engine) sendEmulated(c *emulate.Call, resp *unotify.Resp, r emulate.Result) {
	var err error
	if r.AnsweredEarly {
		err = unix.ENOENT // answered: the thread left the call with that answer
	} else {
		err = unotify.Send(l.listener, resp)
	}
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		l.stats.Vanished.Add(1)
		if l.restarts && !r.Unmade {
			l.lost.keep(c, resp)
		}
	default:
		l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err))
	}
}
