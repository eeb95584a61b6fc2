package capless

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// Maker runs work on one locked OS thread whose capability sets
// are empty: it creates the netlink sockets handed to the target and
// makes the netlink sends that name the kernel (see supervisor/netlink.go). Linux
// credentials are per thread: capset acts on the calling thread only, and
// the thread is never unlocked, so no other goroutine ever runs without
// capabilities; it exits when the maker is closed.
//
// A hop to that thread and back costs two wake-ups, so it keeps a few
// netlink sockets made in advance for each (type, protocol) asked for: a
// fresh netlink socket has no state (no address, no groups) until the
// target binds or uses it, and the one file flag that matters,
// O_NONBLOCK, is set on the taker's request.
type Maker struct {
	reqs   chan func()
	refill chan sockKey // buffered: a full buffer only skips a refill

	mu   sync.Mutex
	pool map[sockKey][]int
}

type sockKey struct{ typ, proto int } // typ without SOCK_NONBLOCK/SOCK_CLOEXEC

// poolSize is how many sockets of one kind are kept ready.
const poolSize = 2

// NewMaker starts the thread. netnsFD, when not -1, is the
// namespace the sockets must belong to: the thread enters it if it is not
// there already (Go may start the thread from any other).
func NewMaker(netns procfs.NsID, netnsFD int) (*Maker, error) {
	m := &Maker{reqs: make(chan func()), refill: make(chan sockKey, 16), pool: map[sockKey][]int{}}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread holds no capabilities and must
		// die with this goroutine.
		if err := enterNetns(netns, netnsFD); err != nil {
			ready <- err
			return
		}
		if err := dropCapabilities(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		m.serve()
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("capability-free socket thread: %w", err)
	}
	return m, nil
}

// serve runs requests and refills until the maker is closed, then closes
// the sockets still kept.
func (m *Maker) serve() {
	for {
		select {
		case f, ok := <-m.reqs:
			if !ok {
				m.drain()
				return
			}
			f()
		case k := <-m.refill:
			m.fill(k)
		}
	}
}

func (m *Maker) fill(k sockKey) {
	m.mu.Lock()
	need := poolSize - len(m.pool[k])
	m.mu.Unlock()
	for ; need > 0; need-- {
		fd, err := unix.Socket(unix.AF_NETLINK, k.typ|unix.SOCK_CLOEXEC, k.proto)
		if err != nil {
			return
		}
		m.mu.Lock()
		m.pool[k] = append(m.pool[k], fd)
		m.mu.Unlock()
	}
}

func (m *Maker) drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, fds := range m.pool {
		for _, fd := range fds {
			unix.Close(fd)
		}
		delete(m.pool, k)
	}
}

func enterNetns(want procfs.NsID, fd int) error {
	id, err := procfs.Namespace(procfs.ThreadSelfPath("ns/net"))
	if err != nil {
		return err
	}
	if id == want {
		return nil
	}
	if fd < 0 {
		return errors.New("not in the starting network namespace")
	}
	return os.NewSyscallError("setns", unix.Setns(fd, unix.CLONE_NEWNET))
}

// dropCapabilities empties the calling thread's effective, permitted and
// inheritable sets (the ambient set goes with the permitted one), then
// checks that the kernel agrees.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capset left capabilities on the thread")
		}
	}
	return nil
}

// Do runs f on the capability-free thread and waits for it.
func (m *Maker) Do(f func()) {
	done := make(chan struct{})
	m.reqs <- func() { f(); close(done) }
	<-done
}

// NetlinkSocket returns a netlink socket made on the capability-free
// thread (close-on-exec; O_NONBLOCK when typ asks for it), from those
// kept ready when there is one. The caller owns the descriptor.
func (m *Maker) NetlinkSocket(typ, proto int) (fd int, err error) {
	k := sockKey{typ &^ (unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC), proto}
	fd = -1
	m.mu.Lock()
	if fds := m.pool[k]; len(fds) > 0 {
		fd, m.pool[k] = fds[len(fds)-1], fds[:len(fds)-1]
	}
	m.mu.Unlock()
	if fd < 0 {
		m.Do(func() { fd, err = unix.Socket(unix.AF_NETLINK, k.typ|unix.SOCK_CLOEXEC, proto) })
		if err != nil {
			return -1, err
		}
	}
	select {
	case m.refill <- k:
	default:
	}
	if typ&unix.SOCK_NONBLOCK != 0 {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return -1, os.NewSyscallError("fcntl", err)
		}
	}
	return fd, nil
}

func (m *Maker) Close() { close(m.reqs) }
