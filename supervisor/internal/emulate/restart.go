package emulate

import (
	"bytes"
	"sync"

	"golang.org/x/sys/unix"
)

// Restarted connects. Without SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (kernels before 5.19) a signal takes the target out of a call nettrap
// has received, and the kernel restarts the call: a blocking connect
// nettrap made may then come again on the socket it connected, and the
// second connect says EISCONN, which a blocking caller takes for an error
// (Go's runtime sends SIGURG often enough to hit it: the bench's raw
// connect did). The kernel's own restarted connect waits for the first
// and returns 0. So where calls restart, the sockets nettrap connected
// for a blocking caller are remembered, a few at a time, and a connect
// to the same address that finds one connected is answered 0.

// maxConnected bounds the sockets remembered: a restart comes at once.
const maxConnected = 64

// connected are the connects nettrap made for blocking callers (socket
// inode and address), newest last, each remembered before it is made: a
// restart can find the socket connected before the first connect's
// goroutine is back from the kernel.
type connected struct {
	mu      sync.Mutex
	next    uint64
	entries []connectEntry
}

type connectEntry struct {
	id   uint64
	ino  uint64
	addr []byte
}

// remember records a connect of socket fd to name about to be made; the
// id names the record.
func (k *connected) remember(fd int, name []byte) (id uint64) {
	ino, ok := inodeOf(fd)
	if !ok {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.entries) == maxConnected {
		k.entries = k.entries[1:]
	}
	k.next++
	k.entries = append(k.entries, connectEntry{id: k.next, ino: ino, addr: append([]byte(nil), name...)})
	return k.next
}

// forget drops record id.
func (k *connected) forget(id uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drop(func(e connectEntry) bool { return e.id == id })
}

// madeBefore tells whether another connect than record own was made by
// nettrap on socket fd to name, and drops own. The other stays: the
// answer of each restart may be taken away in turn.
func (k *connected) madeBefore(fd int, name []byte, own uint64) bool {
	ino, ok := inodeOf(fd)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drop(func(e connectEntry) bool { return e.id == own })
	if !ok {
		return false
	}
	for _, e := range k.entries {
		if e.ino == ino && bytes.Equal(e.addr, name) {
			return true
		}
	}
	return false
}

// drop removes the newest entry match selects.
func (k *connected) drop(match func(connectEntry) bool) {
	for i := len(k.entries) - 1; i >= 0; i-- {
		if match(k.entries[i]) {
			k.entries = append(k.entries[:i], k.entries[i+1:]...)
			return
		}
	}
}

func inodeOf(fd int) (uint64, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0, false
	}
	return st.Ino, true
}

// blockingConnect is resumedConnect for a blocking caller; where calls
// may restart (Emulator.Restarts), a connect that finds the socket
// connected by an earlier connect of nettrap's to the same address (whose
// answer the restart took away) says 0, as the kernel's restarted
// connect does. A program that connects a connected socket again still
// gets EISCONN: no other connect of nettrap's is on record for it.
func (s *Borrowed) blockingConnect(name []byte) Result {
	if !s.e.Restarts {
		return s.resumedConnect(name, s.interruptedTimeout())
	}
	id := s.e.connected.remember(s.FD, name)
	r := s.resumedConnect(name, s.interruptedTimeout())
	switch r.Errno {
	case 0:
		// Kept: this answer may be lost in turn.
	case unix.EISCONN:
		if s.e.connected.madeBefore(s.FD, name, id) {
			return Result{}
		}
	default:
		s.e.connected.forget(id)
	}
	return r
}
