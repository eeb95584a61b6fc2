package emulate

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// A blocking connect the kernel makes sleeps interruptibly: a signal the
// thread would take ends it with ERESTARTSYS (no SO_SNDTIMEO: the kernel
// turns it into EINTR, or restarts the call under SA_RESTART, or after a
// stop) or EINTR (with SO_SNDTIMEO), and the handshake goes on without
// the thread (inet_wait_for_connect, sock_intr_errno). An emulated one
// sleeps in nettrap, and the target waits for the answer killably only
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so a handler would only run
// once the connect is over. So while an emulated blocking connect waits,
// its watch (emusock.go) reads the thread's pending signals, and when one
// is there it answers as the kernel would and lets nettrap's connect run
// on; the kernel, returning from the notification with ERESTARTSYS and a
// signal pending, does what it does for its own connect. A connect again
// on the socket meets the connect still in progress, as it would. The
// watch starts after 1–2 ms (emuwatch.go): a connect that returns at
// once costs nothing more.

// ErrRestartSys is the kernel's ERESTARTSYS. Answered only while a signal
// is pending for the thread, it never reaches user space: the signal code
// makes it EINTR or restarts the call (seccomp's own interrupted wait
// returns it the same way).
const ErrRestartSys = unix.Errno(512)

// signalPoll is how often the pending signals are read.
const signalPoll = 5 * time.Millisecond

// interrupt answers the call early, from its watch, when the thread has
// a signal to take: ERESTARTSYS, or EINTR under SO_SNDTIMEO
// (sock_intr_errno). The connect runs on in the loop's goroutine, whose
// result is not sent when it ends (Result.AnsweredEarly): the kernel
// takes one answer per notification, and a second one, sent before the
// woken thread has taken its notification off the list, fails with
// EINPROGRESS. It returns whether it answered.
func (s *Borrowed) interrupt() bool {
	tgid, ok := signalFor(s.call.TID)
	if !ok {
		return false
	}
	intr := ErrRestartSys
	if tv, err := unix.GetsockoptTimeval(s.FD, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil && tv.Nano() != 0 {
		intr = unix.EINTR
	}
	s.tgid, s.left = tgid, true
	// ENOENT: the thread left the call by itself (it was killed).
	s.call.AnswerEarly(intr)
	return true
}

// interruptedTimeout is what resumedConnect needs to know before the
// connect: timedOut, where a signal can interrupt the connect. Where
// none can (the thread blocks every signal, and the connect is made on
// it), the connect is never resumed and the getsockopt is spared. (A
// freezer's wake-up, a cgroup frozen mid-connect, can still end such a
// connect with EINTR; a resumed connect that then times out says
// EALREADY where the first might have said EINPROGRESS.)
func (s *Borrowed) interruptedTimeout() unix.Errno {
	if s.call.Unsignaled && s.via == nil {
		return unix.EALREADY // never used
	}
	return s.timedOut()
}

// timedOut is what a blocking connect says when its SO_SNDTIMEO runs out:
// EINPROGRESS when it starts the connect, EALREADY when the socket was
// connecting already (see resumedConnect).
func (s *Borrowed) timedOut() unix.Errno {
	if set, err := rawsock.SendTimeout(s.FD); err != 0 || !set {
		return unix.EALREADY // no timeout: nothing to tell apart
	}
	ti, err := unix.GetsockoptTCPInfo(s.FD, unix.IPPROTO_TCP, unix.TCP_INFO)
	// TCP_CLOSE: not connected yet (x/sys/unix names the kernel's TCP
	// states for BPF only).
	if err == nil && ti.State == unix.BPF_TCP_CLOSE {
		return unix.EINPROGRESS
	}
	return unix.EALREADY
}

// signalFor tells whether thread tid has a signal pending that the
// kernel would have woken it for: one sent to the thread and not blocked,
// or one sent to the process that it does not block, if it is the thread
// group's leader (complete_signal wakes the leader first) or no other
// thread could take it. (Among other threads the kernel's choice cannot
// be read; the signal waits for whoever it chose.) It also returns the
// thread's process.
func signalFor(tid int) (tgid int, ok bool) {
	st, ok := procfs.ThreadSignals(tid)
	if !ok || (st.Private|st.Shared)&sigkill != 0 {
		// A thread that is being killed (a fatal signal is turned into a
		// SIGKILL for every thread; the thread takes its own copy off
		// SigPnd as it exits, the process's stays in ShdPnd) leaves the
		// call by itself, and the watch must go on shutting the socket
		// down when it is gone.
		return 0, false
	}
	if st.Private&^st.Blocked != 0 {
		return st.Tgid, true
	}
	shared := st.Shared &^ st.Blocked
	if shared == 0 || st.Tgid == tid {
		return st.Tgid, shared != 0
	}
	tids, err := procfs.Threads(st.Tgid)
	if err != nil {
		return 0, false
	}
	for _, other := range tids {
		if other == tid {
			continue
		}
		o, ok := procfs.ThreadSignals(other)
		if ok && shared&^o.Blocked != 0 {
			return 0, false
		}
	}
	return st.Tgid, true
}

// sigkill is SIGKILL's bit in procfs.Signals' masks.
const sigkill = 1 << (unix.SIGKILL - 1)
