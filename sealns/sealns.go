package sealns

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// Netns is a network namespace made by New, held open by a descriptor.
type Netns struct {
	fd int
	// work runs the functions of Run on one thread in the namespace,
	// started on first use and ended by Close.
	workOnce sync.Once
	work     chan func()
	workErr  error
}

// ErrUnavailable wraps every reason New cannot make a namespace.
var ErrUnavailable = errors.New("no network namespace of its own")

// New makes a network namespace with lo up, on a thread that then exits.
func New() (*Netns, error) {
	var fd int
	var err error
	onThread(func() {
		if err = unix.Unshare(unix.CLONE_NEWNET); err != nil {
			err = os.NewSyscallError("unshare(CLONE_NEWNET)", err)
			return
		}
		if err = loopbackUp(); err != nil {
			return
		}
		fd, err = unix.Open(procfs.ThreadSelfPath("ns/net"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			err = os.NewSyscallError("open ns/net", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &Netns{fd: fd}, nil
}

// onThread runs f on a locked thread that exits when f returns, and
// waits for it: whatever f does to the thread's namespaces dies with it.
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits
		f()
	}()
	<-done
}

// Enter moves the calling thread into the namespace. The thread must be
// locked, and must exit without being unlocked (as supervisor.Start's
// forking thread does).
func (n *Netns) Enter() error {
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		return os.NewSyscallError("setns(CLONE_NEWNET)", err)
	}
	return nil
}

// Do runs f on a thread in the namespace, which exits afterwards: the
// sockets f makes are the namespace's.
func (n *Netns) Do(f func() error) error {
	var err error
	onThread(func() {
		if err = n.Enter(); err == nil {
			err = f()
		}
	})
	return err
}

// Run is Do on one thread kept in the namespace for the purpose, for
// calls made often (a sock_diag dump per checked unix connect): a
// channel hand-off instead of a new thread each time. Calls are served
// one at a time.
func (n *Netns) Run(f func() error) error {
	n.workOnce.Do(n.startWorker)
	if n.workErr != nil {
		return n.workErr
	}
	done := make(chan error, 1)
	n.work <- func() { done <- f() }
	return <-done
}

// startWorker starts Run's thread; workErr says why it could not enter.
func (n *Netns) startWorker() {
	n.work = make(chan func())
	entered := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits
		err := n.Enter()
		entered <- err
		if err != nil {
			return
		}
		for f := range n.work {
			f()
		}
	}()
	n.workErr = <-entered
}

// Close lets the namespace go once nothing else holds it, and ends
// Run's thread. Nothing may call Run or Do after it.
func (n *Netns) Close() error {
	if n == nil || n.fd < 0 {
		return nil
	}
	n.workOnce.Do(func() {}) // no worker starts after this
	if n.work != nil && n.workErr == nil {
		close(n.work)
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}

// loopbackUp sets lo up in the calling thread's namespace (a new one
// has it down, and 127.0.0.1 unreachable).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl(SIOCGIFFLAGS lo)", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return os.NewSyscallError("ioctl(SIOCSIFFLAGS lo)", err)
	}
	return nil
}
