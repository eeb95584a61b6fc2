package notify

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/capless"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// Engine is the notify engine: the Engine that receives the listener's
// notifications and answers them (see run for who answers what). Start
// it, Run it on a goroutine of its own, Kick from the thread that
// carries the filter once the command is reaped, then Stop, wait for
// Run, Wait, and Close.
type Engine struct {
	listener int
	decider  decision.Decider
	emu      *emulate.Emulator // nil: allowed calls always continue in the kernel
	vmRead   atomic.Bool       // read target memory with process_vm_readv (mem.go)
	stats    *answer.Stats
	wake     [2]int        // pipe: a write stops the loop
	done     chan struct{} // closed by the goroutine that ends the loop
	inflight sync.WaitGroup
	errs     *errlog.Log
	netns    *namespace.Starting // nil when it could not be read
	capMaker *capless.Maker      // nil when the thread could not be made
	noAddfd  atomic.Bool         // the kernel refused SECCOMP_ADDFD_FLAG_SEND
	// blocking: receivers block in RECV (receiver.go), which needs the
	// filter to trap the call that wakes them (kick.go); otherwise the
	// loop polls before each RECV (serve).
	blocking bool
	recv     receivers
	recvSpin time.Duration // how long a receiver spins before RECV (spin.go)
	stopping atomic.Bool
	// restarts: a signal can take a target out of a call nettrap has
	// received (no WAIT_KILLABLE_RECV); lost keeps the answers of
	// emulated calls it took away (restart.go).
	restarts bool
	lost     lostAnswers
	// keepSignals: receivers do not block signals (Config.KeepSignals).
	keepSignals bool
	busy        sync.Map // thread → chan closed when its call is answered
}

// Config is what the engine needs besides the listener: made by the
// Session's shared start-up.
type Config struct {
	Decider decision.Decider
	Stats   *answer.Stats
	Errs    *errlog.Log
	// Emu makes allowed calls itself; nil: they continue in the kernel.
	Emu *emulate.Emulator
	// Netns is the namespace the command started in; nil when it could
	// not be read.
	Netns *namespace.Starting
	// Blocking: receivers block in RECV, for a filter that traps the
	// call that wakes them (Kickable); else the loop polls.
	Blocking bool
	// RecvSpin is how long a receiver spins before RECV (RecvSpin).
	RecvSpin time.Duration
	// CapMaker makes capability-free netlink sockets; nil when it
	// could not be made. The engine closes it at Close.
	CapMaker *capless.Maker
	// Restarts: the filter was installed without WAIT_KILLABLE_RECV, so
	// a signal can take a target out of a call nettrap has received, and
	// the call restarts (restart.go).
	Restarts bool
	// KeepSignals: receivers leave their thread's signals unblocked
	// (blockSignals), as a CPU profile of nettrap needs.
	KeepSignals bool
}

// New is the engine serving listener, which it does not own.
func New(listener int, cfg Config) (*Engine, error) {
	l := &Engine{listener: listener, decider: cfg.Decider, stats: cfg.Stats, errs: cfg.Errs, done: make(chan struct{}),
		netns: cfg.Netns, blocking: cfg.Blocking, recvSpin: cfg.RecvSpin, capMaker: cfg.CapMaker, restarts: cfg.Restarts,
		keepSignals: cfg.KeepSignals}
	if err := unix.Pipe2(l.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	if cfg.Emu != nil {
		cfg.Emu.Stop, cfg.Emu.Report = l.wake[0], l.report
		l.emu = cfg.Emu
	}
	// process_vm_readv first, emulating or not: one syscall per read where
	// /proc/TID/mem costs an open (a path walk, an access check), a pread
	// and a close per call. Where a seccomp profile refuses it (Docker's
	// default denies it without CAP_SYS_PTRACE), the first EPERM falls
	// back to /proc/TID/mem for good (targetmem).
	l.vmRead.Store(true)
	return l, nil
}

// Start does what must be done before the Session's Start returns.
func (l *Engine) Start() { l.start() }

// Run serves until Stop, or until no task uses the filter any more.
func (l *Engine) Run() { l.run() }

// Kick wakes the receivers blocked in RECV so that they see Stop: call
// it from the thread that carries the filter (kick.go).
func (l *Engine) Kick() { l.kick() }

// Stop asks Run to end (see stop).
func (l *Engine) Stop() { l.stop() }

// Wait waits for the calls still being answered, once Run has returned.
func (l *Engine) Wait() { l.inflight.Wait() }

// Close releases the loop's own descriptors and the capability-free
// netlink maker; the listener is the caller's.
func (l *Engine) Close() {
	l.close()
	if l.capMaker != nil {
		l.capMaker.Close()
	}
}

// start does what must be done before Start returns; run does the rest.
func (l *Engine) start() {
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
func (l *Engine) run() {
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
func (l *Engine) serve() {
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
		l.handle(n, false)
		l.inflight.Done()
		if !handOff.Stop() {
			return // the successor polls now
		}
	}
}

// next waits for a notification and receives it. It returns nil when
// there was none to receive after all, and end when the loop must stop.
func (l *Engine) next() (n *unotify.Notif, end bool) {
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
func (l *Engine) receive() *unotify.Notif {
	n := new(unotify.Notif)
	if err := unotify.Recv(l.listener, n); err != nil {
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
func (l *Engine) handle(n *unotify.Notif, unsignaled bool) {
	defer l.oneAtATime(n)()
	if l.replay(n) {
		return
	}
	c := l.newCall(n)
	c.Unsignaled = unsignaled
	if l.serve1(c) {
		recycle(c)
	}
}

// serve1 serves call c (see handle), and tells whether nothing refers
// to c any more: the decider's answer says it kept nothing (Unkept), and
// only a plain allowed call, made or continued, is recycled.
func (l *Engine) serve1(c *emulate.Call) (unkept bool) {
	if !c.Syscall.Foreign {
		m := c.Mem(&l.vmRead)
		m.Prefetch = l.emu != nil
		c.Dests, c.Err = decode.ReadDests(m, &c.Call)
		m.Close()
	}
	if !unotify.IDValid(l.listener, c.ID) {
		l.stats.Vanished.Add(1)
		return true // nobody saw it
	}
	defer c.Release()
	c.Decode()
	a := l.decide(c)
	if a.Capless() && l.capless(c) {
		return false
	}
	return l.answer(c, a) && !a.KeepsCall()
}

// answerValue answers c with a return value of its own: the call was made
// by the supervisor.
func (l *Engine) answerValue(c *emulate.Call, v int64) {
	l.stats.Allowed.Add(1)
	l.send(&unotify.Resp{ID: c.ID, Val: v})
}

// send sends one response; a target that left the call is counted.
func (l *Engine) send(resp *unotify.Resp) {
	if err := unotify.Send(l.listener, resp); err != nil {
		if errors.Is(err, unix.ENOENT) {
			l.stats.Vanished.Add(1)
			return
		}
		l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err))
	}
}

// answer sends the answer to c, counting it. It tells whether the call
// was only made or continued (nothing of the engine's refers to c).
func (l *Engine) answer(c *emulate.Call, a decision.Answer) (plain bool) {
	if a.Allowed() && emulate.ReapedPidfd(c) {
		// Whatever the descriptor number names by now, nothing is taken.
		l.answerErrno(c, unix.ESRCH)
		return false
	}
	if a.Allowed() && l.emu != nil && emulate.EmulablePidfd(c) {
		if l.pidfdGetfd(c) {
			return false
		}
		if r, done := l.emu.Cannot(c, emulate.ErrNoHandOver); done {
			l.answerErrno(c, r.Errno)
			return false
		}
	}
	resp := unotify.Resp{ID: c.ID}
	r, how := answer.Settle(l.emu, c, a, true, l.report)
	switch {
	case how == answer.Emulated:
		l.stats.Emulated.Add(1)
		fallthrough
	case how == answer.Answered:
		resp.Val, resp.Error = r.Val, -int32(r.Errno)
	case a.Allowed():
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	default:
		resp.Error = -int32(a.Errno())
	}
	if a.Allowed() {
		l.stats.Allowed.Add(1)
	} else {
		l.stats.Denied.Add(1)
	}
	if how == answer.Emulated {
		l.sendEmulated(c, &resp, r)
		return true
	}
	l.send(&resp)
	return how == answer.CarryOn
}

// decide asks the decider (decideWith).
func (l *Engine) decide(c *emulate.Call) decision.Answer {
	return answer.Decide(l.decider, l.report, c)
}

func (l *Engine) report(err error) { l.errs.Add(err) }

// stop asks run to end. The caller then waits for run to return, and only
// then for inflight: before run has returned the polling goroutine may
// still receive a call (and Add to inflight), and a Wait racing with that
// Add could let the listener be closed under an answer still being sent.
//
// Blocking receivers see stopping when they wake; the thread that carries
// the filter wakes them (kick), once the command is reaped.
func (l *Engine) stop() {
	l.stopping.Store(true)
	unix.Write(l.wake[1], []byte{0})
}

func (l *Engine) close() {
	unix.Close(l.wake[0])
	unix.Close(l.wake[1])
}
