package supervisor

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Answer is a decision on one call: let it run, or fail it with Errno.
type Answer struct {
	Allow bool
	Errno unix.Errno
	// Redirect, on a denied connect or send, asks the supervisor to
	// make the call to a stand-in on loopback instead (the DNS sinkhole),
	// where it can (emulation on, an inet socket). Nil: fail with Errno.
	Redirect *Redirect
	// Capless, with Allow: make the call on a thread without
	// capabilities instead of letting it continue (see netlink.go): a
	// netlink socket(2) is created and handed over, a netlink send that
	// names the kernel is sent with the bytes that were read.
	Capless bool
	// Peer, with Allow: the call may reach only a socket of the confined
	// tree, or one Peer.Outside lets through (--sealed; peer.go). Such a
	// call is made by nettrap or denied, never continued.
	Peer *PeerCheck
}

// Redirect names the stand-in a denied call goes to, and is told how it
// went.
type Redirect struct {
	// To4 and To6 are the stand-in's addresses for the socket's type (TCP
	// or UDP): To4 for AF_INET sockets and v4-mapped destinations, To6
	// for other IPv6 ones (invalid: no IPv6 stand-in, fail with Errno).
	To4, To6 netip.AddrPort
	// Done is called exactly once: with the redirected socket's local
	// address (the stand-in sees its traffic come from there) when the
	// call was redirected, or with ok false when it failed with Errno.
	Done func(local netip.AddrPort, ok bool)
}

// Decider decides intercepted calls. It may be called from several
// goroutines at once and must be safe for that. It may block (for instance
// to drain a test's output first), but every moment it takes is a moment
// the calling thread waits, and past a millisecond or two another
// goroutine takes over receiving the other threads' calls.
type Decider interface {
	Decide(c *Call) Answer
}

// QuickDecider is a Decider that tells which calls it decides without
// waiting on anything a confined process could hold up (an inner nettrap
// asked which test runs). The ptrace engine decides those on its tracer
// thread, and the others on another goroutine, so that the tracer serves
// the confined processes' stops meanwhile (ptrace.go). A Decider that
// does not implement it is asked on another goroutine always: a decorator
// (testexec's) must pass Quick on.
type QuickDecider interface {
	Decider
	// Quick is called before Decide, and must not wait.
	Quick(c *Call) bool
}

// QuickFunc adapts a function that never waits on a confined process to
// a QuickDecider whose every call is quick.
type QuickFunc func(c *Call) Answer

// Decide calls f.
func (f QuickFunc) Decide(c *Call) Answer { return f(c) }

// Quick is always true.
func (f QuickFunc) Quick(*Call) bool { return true }

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(c *Call) Answer

// Decide calls f.
func (f DeciderFunc) Decide(c *Call) Answer { return f(c) }

// Stats counts what the loop did.
type Stats struct {
	Notifications atomic.Uint64 // received from the kernel
	Allowed       atomic.Uint64
	Denied        atomic.Uint64
	Vanished      atomic.Uint64 // the target left the call before the answer (ENOENT)
	Emulated      atomic.Uint64 // allowed calls the supervisor made itself (emulate.go)
	// CaplessNetlink counts the netlink sockets handed over, and netlink
	// sends made, without capabilities (also counted in Allowed).
	CaplessNetlink atomic.Uint64
}

// loop receives notifications from the listener and answers them; see run
// for who answers what.
type loop struct {
	listener int
	decider  Decider
	emu      *emulator   // nil: allowed calls always continue in the kernel
	vmRead   atomic.Bool // read target memory with process_vm_readv (mem.go)
	stats    *Stats
	wake     [2]int        // pipe: a write stops the loop
	done     chan struct{} // closed by the goroutine that ends the loop
	inflight sync.WaitGroup
	errs     *errorLog
	netns    *startingNetns // nil when it could not be read
	capMaker *caplessMaker  // nil when the thread could not be made
	noAddfd  atomic.Bool    // the kernel refused SECCOMP_ADDFD_FLAG_SEND
	// blocking: receivers block in RECV (receiver.go), which needs the
	// filter to trap the call that wakes them (kick.go); otherwise the
	// loop polls before each RECV (serve).
	blocking bool
	recv     receivers
	recvSpin time.Duration // how long a receiver spins before RECV (spin.go)
	stopping atomic.Bool
}

func newLoop(listener int, d Decider, stats *Stats, errs *errorLog) (*loop, error) {
	l := &loop{listener: listener, decider: d, stats: stats, errs: errs, done: make(chan struct{})}
	if err := unix.Pipe2(l.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	return l, nil
}

// start does what must be done before Start returns; run does the rest.
func (l *loop) start() {
	if l.blocking {
		l.startBlocking()
	}
}

// run serves until stop is called or no task uses the filter any more,
// with blocking receivers (receiver.go) where it can. Otherwise, since
// RECV would block forever once the last target is gone before 6.6 (the
// kernel only woke pollers with POLLHUP), and nothing else wakes it, every
// RECV waits in poll first, together with the wake pipe.
//
// Polling, one goroutine at a time polls, and it answers what it receives itself:
// the stopped target never waits for the Go scheduler to wake another OS
// thread (on a small machine that wake-up cost as much as the answer). A
// decision that takes longer than handOffAfter (a decider draining a test's
// output, or asking an inner nettrap) hands the polling over to a new
// goroutine, so other threads' calls wait that long at most.
func (l *loop) run() {
	if l.blocking {
		l.runBlocking()
		return
	}
	l.serve()
	<-l.done
}

// handOffAfter is how long one answer may keep the polling goroutine (a
// watchdog tick, with blocking receivers).
const handOffAfter = time.Millisecond

// serve polls and answers until the loop ends, or until an answer took so
// long that a successor took over the polling.
func (l *loop) serve() {
	for {
		n, end := l.next()
		if end {
			close(l.done)
			return
		}
		if n == nil {
			continue
		}
		// Counted before any successor exists, hence before the loop can
		// end: shutdown's inflight.Wait after <-done never misses it.
		l.inflight.Add(1)
		handOff := time.AfterFunc(handOffAfter, l.serve)
		l.handle(n)
		l.inflight.Done()
		if !handOff.Stop() {
			return // the successor polls now
		}
	}
}

// next waits for a notification and receives it. It returns nil when
// there was none to receive after all, and end when the loop must stop.
func (l *loop) next() (n *notif, end bool) {
	fds := []unix.PollFd{
		{Fd: int32(l.listener), Events: unix.POLLIN},
		{Fd: int32(l.wake[0]), Events: unix.POLLIN},
	}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			l.report(os.NewSyscallError("poll", err))
			return nil, true
		}
		if fds[1].Revents != 0 {
			return nil, true
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			return l.receive(), false
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return nil, true
		}
	}
}

// receive takes one notification from the kernel, or returns nil.
func (l *loop) receive() *notif {
	n := new(notif)
	if err := recvNotif(l.listener, n); err != nil {
		// ENOENT: the target left the syscall (a signal, Go's SIGURG
		// preemption, death) between poll and RECV. EINTR: our own
		// thread was interrupted. Both are normal.
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINTR) {
			l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", err))
		}
		return nil
	}
	l.stats.Notifications.Add(1)
	return n
}

// handle reads the call's arguments, checks that the notification is still
// the one it was (the memory read belongs to the right task), decides and
// answers. Every path ends in an answer or a vanished target: a target is
// never left waiting.
func (l *loop) handle(n *notif) {
	c := l.newCall(n)
	if !c.Syscall.Foreign {
		m := newMemReader(n.PID).useVM(&l.vmRead)
		m.prefetch = l.emu != nil
		c.Dests, c.Err = readDests(m, c)
		m.Close()
	}
	if !idValid(l.listener, n.ID) {
		l.stats.Vanished.Add(1)
		return
	}
	defer c.release()
	c.decode()
	a := l.decide(c)
	if a.Allow && a.Capless && l.capless(c) {
		return
	}
	l.answer(c, a)
}

// answerValue answers c with a return value of its own: the call was made
// by the supervisor.
func (l *loop) answerValue(c *Call, v int64) {
	l.stats.Allowed.Add(1)
	l.send(&notifResp{ID: c.ID, Val: v})
}

// send sends one response; a target that left the call is counted.
func (l *loop) send(resp *notifResp) {
	if err := sendResp(l.listener, resp); err != nil {
		if errors.Is(err, unix.ENOENT) {
			l.stats.Vanished.Add(1)
			return
		}
		l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err))
	}
}

// answer sends the answer to c, counting it.
func (l *loop) answer(c *Call, a Answer) {
	resp := notifResp{ID: c.ID}
	switch {
	case a.Allow:
		if l.emu != nil && emulablePidfd(c) {
			if l.pidfdGetfd(c) {
				return
			}
			if r, done := l.emu.cannot(c, errNoHandOver); done {
				l.answerErrno(c, r.errno)
				return
			}
		}
		if a.Peer != nil && (l.emu == nil || !emulable(c)) {
			l.report(fmt.Errorf("allowed %s by pid %d denied: %w", c.Syscall.Name, c.TID, errPeerUnchecked))
			l.answerErrno(c, unix.EPERM)
			return
		}
		l.stats.Allowed.Add(1)
		c.peer = a.Peer
		if l.emu != nil && emulable(c) {
			if r, done := l.emu.perform(c); done {
				l.stats.Emulated.Add(1)
				resp.Val, resp.Error = r.val, -int32(r.errno)
				break
			}
			if c.peer != nil {
				resp.Error = -int32(unix.EPERM) // never continued unchecked
				break
			}
		}
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	default:
		if a.Errno == 0 {
			a.Errno = unix.EPERM
		}
		resp.Error = -int32(a.Errno)
		l.stats.Denied.Add(1)
		if a.Redirect != nil {
			resp.Val, resp.Error = l.redirect(c, a)
		}
	}
	l.send(&resp)
}

// redirect makes a denied call to the stand-in of a.Redirect where it
// can, and tells Done how it went. It returns the answer's value and
// error.
func (l *loop) redirect(c *Call, a Answer) (int64, int32) {
	if l.emu != nil && emulable(c) {
		val, errno := l.emu.redirect(c, a)
		return val, -int32(errno)
	}
	a.Redirect.Done(netip.AddrPort{}, false)
	return 0, -int32(a.Errno)
}

// decide asks the decider (decideWith).
func (l *loop) decide(c *Call) Answer { return decideWith(l.decider, l.report, c) }

// decideWith asks d, and fails the call closed if d panics: a bug in a
// policy must never let a call through nor hang the target.
func decideWith(d Decider, report func(error), c *Call) (a Answer) {
	defer func() {
		if r := recover(); r != nil {
			report(fmt.Errorf("decider panicked on %s: %v", c.Syscall.Name, r))
			a = Answer{Errno: unix.EPERM}
		}
	}()
	if c.Err != 0 {
		// Unreadable or malformed arguments: the decider still sees the
		// call (to audit it), but cannot turn it into an allow.
		d.Decide(c)
		return Answer{Errno: c.Err}
	}
	return d.Decide(c)
}

func (l *loop) report(err error) { l.errs.add(err) }

// stop asks run to end. The caller then waits for run to return, and only
// then for inflight: before run has returned the polling goroutine may
// still receive a call (and Add to inflight), and a Wait racing with that
// Add could let the listener be closed under an answer still being sent.
//
// Blocking receivers see stopping when they wake; the thread that carries
// the filter wakes them (kick), once the command is reaped.
func (l *loop) stop() {
	l.stopping.Store(true)
	unix.Write(l.wake[1], []byte{0})
}

func (l *loop) close() {
	unix.Close(l.wake[0])
	unix.Close(l.wake[1])
}
