package supervisor

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// firstExec answers the command's own execve under a filter that traps
// execve (Options.TrapsExec). exec.Cmd.Start returns only once the child
// has exec'd, and the loop starts only after Start: without this the
// child would wait for an answer no one gives. It answers one
// notification, CONTINUE if it is a native execve (the child between fork
// and exec makes no other trapped call), EPERM otherwise (fail closed),
// and ends when stopped: what comes after the exec waits for the loop.
type firstExec struct {
	listener int
	stopped  atomic.Bool
	done     chan struct{}
}

func startFirstExec(listener int) *firstExec {
	f := &firstExec{listener: listener, done: make(chan struct{})}
	go f.serve()
	return f
}

func (f *firstExec) serve() {
	defer close(f.done)
	fds := []unix.PollFd{{Fd: int32(f.listener), Events: unix.POLLIN}}
	for !f.stopped.Load() {
		fds[0].Revents = 0
		if n, err := unix.Poll(fds, 20); err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		var n unotify.Notif
		if unotify.Recv(f.listener, &n) != nil {
			continue
		}
		resp := unotify.Resp{ID: n.ID, Error: -int32(unix.EPERM)}
		if c := bpf.Lookup(n.Data.Arch, n.Data.Nr); c.Kind == bpf.Execve && !c.Foreign {
			resp = unotify.Resp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		}
		unotify.Send(f.listener, &resp)
		return
	}
}

// stop ends serve and waits for it: the loop may take over the listener.
func (f *firstExec) stop() {
	if f != nil {
		f.stopped.Store(true)
		<-f.done
	}
}

// schedulerForVfork readies the Go scheduler for a start whose execve
// firstExec must answer, and returns what undoes it. exec.Cmd.Start forks
// with vfork where the command makes no user namespace, and the forking
// thread keeps its P (a raw syscall) until the child's execve is
// answered: the answer needs another P, and no stop-the-world may begin
// meanwhile (it would wait for that P forever, and firstExec for it).
// With GOMAXPROCS=1 (one CPU, or a container's CPU limit) every start hung
// so. Hence at least two Ps, and no GC cycle while Start runs.
// SetGCPercent(-1) returns once a cycle under way has marked, but the
// cycle's last step still follows: it flushes every P's caches
// (forEachP), holding its own P, and waits for the vfork parent's P
// forever, firstExec then having no P (seen with two Ps, in
// TestEscapeNetnsVethVxlan). That step ends before the cycle releases
// worldsema, which ReadMemStats takes: after it no cycle is left.
func schedulerForVfork() (restore func()) {
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 {
		runtime.GOMAXPROCS(2)
	}
	gc := debug.SetGCPercent(-1)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return func() {
		debug.SetGCPercent(gc)
		if procs < 2 {
			runtime.GOMAXPROCS(procs)
		}
	}
}
