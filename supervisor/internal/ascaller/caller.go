package ascaller

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
)

// idleCallers is how many caller threads are kept waiting.
const idleCallers = 2

// Pool hands out caller threads.
type Pool struct {
	own       procfs.Creds // nettrap's
	ownRoot   unix.Stat_t
	ownMnt    procfs.NsID
	ownUser   procfs.NsID
	canSwitch bool  // nettrap is root with CAP_SETUID and CAP_SETGID
	canChroot bool  // CAP_SYS_CHROOT
	err       error // the pool cannot work at all

	noPidfdInfo atomic.Bool // the kernel has no PIDFD_GET_INFO (before 6.13)

	mu   sync.Mutex
	idle []*callerThread
}

// Ctx is how one call must be made: in the caller's working
// directory and root, with its credentials. The zero value (cwd and
// root -1, creds nil) needs nothing: the call is made inline.
type Ctx struct {
	Cwd, Root int // O_PATH descriptors; -1: not needed
	Creds     *procfs.Creds
	pool      *Pool
	// ViaProc: the relative names were rewritten to start at
	// /proc/self/fd/CWD (see viaProcCwd): the cwd is not changed to.
	ViaProc bool
}

func (x *Ctx) inline() bool {
	return (x.Cwd < 0 || x.ViaProc) && x.Root < 0 && x.Creds == nil
}

func (x *Ctx) Close() {
	if x.Cwd >= 0 {
		unix.Close(x.Cwd)
	}
	if x.Root >= 0 {
		unix.Close(x.Root)
	}
}

// NewPool learns nettrap's own credentials, root and mount
// namespace, as its plain threads have them (see plainthread.Run).
func NewPool() *Pool {
	p := &Pool{}
	plainthread.Run(func() { p.learn() })
	return p
}

func (p *Pool) learn() {
	var err error
	if p.own, err = procfs.ReadCreds(procfs.ThreadSelfPath("status")); err != nil {
		p.err = err
		return
	}
	if err = unix.Stat("/", &p.ownRoot); err != nil {
		p.err = os.NewSyscallError("stat", err)
		return
	}
	if p.ownMnt, err = procfs.Namespace(procfs.ThreadSelfPath("ns/mnt")); err != nil {
		p.err = err
		return
	}
	if p.ownUser, err = procfs.Namespace(procfs.ThreadSelfPath("ns/user")); err != nil {
		p.err = err
		return
	}
	has := func(c int) bool { return p.own.CapEff&(1<<c) != 0 }
	p.canSwitch = p.own.UID == [4]int{} && has(unix.CAP_SETUID) && has(unix.CAP_SETGID)
	p.canChroot = has(unix.CAP_SYS_CHROOT)
}

// Pinned is how calls naming pinned paths are made: with the caller's
// credentials (connect checks write permission on the socket file), from
// nettrap's own root, where /proc/self/fd/N names nettrap's descriptor (a
// root of the caller's, which it may have made, could hold anything at
// /proc). A nil x gives nil.
func (x *Ctx) Pinned() *Ctx {
	if x == nil {
		return nil
	}
	return &Ctx{Cwd: -1, Root: -1, Creds: x.Creds, pool: x.pool}
}

// Caps is what the pool learnt nettrap may do: switch credentials, and
// chroot; err: the pool cannot work at all.
func (p *Pool) Caps() (canSwitch, canChroot bool, err error) {
	return p.canSwitch, p.canChroot, p.err
}

// ErrGone: the target left the call (it died, or a signal took it out)
// while its state was being read. Nobody waits for the answer.
var ErrGone = errors.New("target left the call")

// errCallerState: the caller's state cannot be taken on (another
// identity without the capability to switch, another root without
// CAP_SYS_CHROOT).
var errCallerState = errors.New("cannot act as the caller")

// Context learns how a call of thread tid must be made. pidfd names
// the caller. paths: some message names a path (relative: needs the
// working directory). The caller must still be in the call afterwards,
// or what was read may be another task's. ErrGone: it is not.
//
// Reading /proc/TID/status costs some 50 µs, so the ids come from the
// pidfd (PIDFD_GET_INFO, Linux 6.13+) and the capabilities from capget,
// and the status file is read only for a caller whose ids differ from
// nettrap's (its groups are needed then). A caller with nettrap's ids
// has its groups too, short of a setgroups of its own (CAP_SETGID): see
// docs/checks.md, SO_PEERGROUPS. Capabilities matter to a path's permission
// checks only.
func (p *Pool) Context(tid, pidfd int, paths, relative bool) (*Ctx, error) {
	x := &Ctx{Cwd: -1, Root: -1, pool: p}
	if p.err != nil {
		return nil, p.err
	}
	creds, err := p.ids(tid, pidfd)
	if err != nil {
		return nil, ErrGone
	}
	if paths {
		if creds.CapEff, err = capEffective(tid); err != nil {
			return nil, ErrGone
		}
		if creds.CapEff != 0 {
			userns, err := procfs.Namespace(procfs.TaskPath(tid, "ns/user"))
			if err != nil || userns != p.ownUser {
				// Its capabilities hold in a user namespace of its
				// own, not in nettrap's, where the call is made: it
				// gets none (its ids, shown in nettrap's namespace,
				// still count).
				creds.CapEff = 0
			}
		}
	} else {
		creds.CapEff = p.own.CapEff // not asked: they do not matter
	}
	if creds.UID != p.own.UID || creds.GID != p.own.GID || creds.CapEff != p.own.CapEff {
		if !p.canSwitch {
			return nil, fmt.Errorf("%w: its credentials differ from nettrap's, which cannot change its own", errCallerState)
		}
		if creds.Groups == nil {
			full, err := procfs.ReadCreds(procfs.TaskPath(tid, "status"))
			if err != nil {
				return nil, ErrGone
			}
			creds.Groups = full.Groups
		}
		if !paths {
			creds.CapEff = 0
		}
		x.Creds = &creds
	}
	if !paths {
		return x, nil
	}
	if err := x.openRoot(tid); err != nil {
		x.Close()
		return nil, err
	}
	if relative {
		fd, err := unix.Open(procfs.TaskPath(tid, "cwd"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("%w: working directory: %w", errCallerState, os.NewSyscallError("open", err))
		}
		x.Cwd = fd
	}
	return x, nil
}

// ids returns the caller's uids and gids (Groups nil: not read), from its
// pidfd where the kernel tells them (6.13+), else from its status file
// (Groups read too).
func (p *Pool) ids(tid, pidfd int) (procfs.Creds, error) {
	if !p.noPidfdInfo.Load() {
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
		err := unix.IoctlPidfdInfo(pidfd, &info)
		if err == nil && info.Mask&unix.PIDFD_INFO_CREDS != 0 {
			return procfs.Creds{
				UID: [4]int{int(info.Ruid), int(info.Euid), int(info.Suid), int(info.Fsuid)},
				GID: [4]int{int(info.Rgid), int(info.Egid), int(info.Sgid), int(info.Fsgid)},
			}, nil
		}
		if err == unix.ESRCH {
			return procfs.Creds{}, err
		}
		p.noPidfdInfo.Store(true) // before 6.13: ENOTTY
	}
	return procfs.ReadCreds(procfs.TaskPath(tid, "status"))
}

// capEffective returns thread tid's effective capabilities (capget acts
// on any task named by its tid).
func capEffective(tid int) (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3, Pid: int32(tid)}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, os.NewSyscallError("capget", err)
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, nil
}

// openRoot keeps the caller's root when it is not nettrap's own (another
// directory, or the same one in another mount namespace).
func (x *Ctx) openRoot(tid int) error {
	p := x.pool
	mnt, err := procfs.Namespace(procfs.TaskPath(tid, "ns/mnt"))
	if err != nil {
		return fmt.Errorf("%w: %w", errCallerState, err)
	}
	fd, err := unix.Open(procfs.TaskPath(tid, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: root: %w", errCallerState, os.NewSyscallError("open", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("%w: root: %w", errCallerState, os.NewSyscallError("fstat", err))
	}
	if mnt == p.ownMnt && st.Dev == p.ownRoot.Dev && st.Ino == p.ownRoot.Ino {
		unix.Close(fd)
		return nil
	}
	if !p.canChroot {
		unix.Close(fd)
		return fmt.Errorf("%w: its root differs from nettrap's, which lacks CAP_SYS_CHROOT", errCallerState)
	}
	x.Root = fd
	return nil
}

// Run runs f as the caller: inline when nothing needs changing, on a
// caller thread otherwise. An error says f did not Run.
func (x *Ctx) Run(f func()) error {
	if x == nil || x.inline() {
		f()
		return nil
	}
	p := x.pool
	t, err := p.get()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	t.reqs <- func() { done <- t.as(x, f) }
	err = <-done
	p.put(t, err)
	return err
}

func (p *Pool) get() (*callerThread, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		t := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return t, nil
	}
	p.mu.Unlock()
	return newCallerThread()
}

// put keeps t for the next call, unless enough are kept or t could not
// change back (its thread then ends).
func (p *Pool) put(t *callerThread, err error) {
	if !errors.Is(err, errTainted) {
		p.mu.Lock()
		if len(p.idle) < idleCallers {
			p.idle = append(p.idle, t)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	close(t.reqs)
}

// callerThread is one locked OS thread with an fs_struct of its own.
type callerThread struct {
	reqs chan func()
	root int // O_PATH descriptor of nettrap's root, to go back to
}

// errTainted: a caller thread could not change back; it ends.
var errTainted = errors.New("caller thread could not restore its own state")

func newCallerThread() (*callerThread, error) {
	t := &callerThread{reqs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread's fs_struct and, during a call, its
		// credentials are its own, and it must die with this goroutine.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			ready <- os.NewSyscallError("unshare", err)
			return
		}
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			ready <- os.NewSyscallError("open", err)
			return
		}
		t.root = fd
		ready <- nil
		for f := range t.reqs {
			f()
		}
		unix.Close(fd)
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("caller thread: %w", err)
	}
	return t, nil
}

// as runs f in x's state, then changes back. It runs on the thread.
func (t *callerThread) as(x *Ctx, f func()) error {
	if x.Root >= 0 {
		if err := chrootTo(x.Root); err != nil {
			if rerr := chrootTo(t.root); rerr != nil {
				return fmt.Errorf("%w: %w", errTainted, rerr)
			}
			return err
		}
	}
	err := t.enter(x)
	if err == nil {
		f()
	}
	if x.Creds != nil {
		if rerr := restoreCreds(x.pool.own); rerr != nil {
			return fmt.Errorf("%w: %w", errTainted, rerr)
		}
	}
	if x.Root >= 0 {
		if rerr := chrootTo(t.root); rerr != nil {
			return fmt.Errorf("%w: %w", errTainted, rerr)
		}
	}
	return err
}

// enter changes to the caller's working directory and credentials.
func (t *callerThread) enter(x *Ctx) error {
	if x.Cwd >= 0 {
		if err := unix.Fchdir(x.Cwd); err != nil {
			return os.NewSyscallError("fchdir", err)
		}
	}
	if x.Creds != nil {
		return switchCreds(*x.Creds, x.pool.own)
	}
	return nil
}

func chrootTo(dir int) error {
	if err := unix.Fchdir(dir); err != nil {
		return os.NewSyscallError("fchdir", err)
	}
	return os.NewSyscallError("chroot", unix.Chroot("."))
}

// switchCreds gives the calling thread c's groups, gids, uids (the saved
// uid stays 0) and effective capabilities (within nettrap's permitted
// set: a caller with more is not given more than nettrap has).
func switchCreds(c, own procfs.Creds) error {
	if errno := rawSetgroups(c.Groups); errno != 0 {
		return os.NewSyscallError("setgroups", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(c.GID[0]), uintptr(c.GID[1]), uintptr(c.GID[2])); errno != 0 {
		return os.NewSyscallError("setresgid", errno)
	}
	if c.GID[3] != c.GID[1] {
		unix.RawSyscall(unix.SYS_SETFSGID, uintptr(c.GID[3]), 0, 0)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(c.UID[0]), uintptr(c.UID[1]), 0); errno != 0 {
		return os.NewSyscallError("setresuid", errno)
	}
	if c.UID[3] != c.UID[1] {
		unix.RawSyscall(unix.SYS_SETFSUID, uintptr(c.UID[3]), 0, 0)
	}
	return setCaps(c.CapEff&own.CapPrm, own.CapPrm)
}

// restoreCreds gives the thread nettrap's credentials back: uid 0 first
// (allowed by the saved uid, and it restores the effective capabilities
// from the permitted set), then the rest.
func restoreCreds(own procfs.Creds) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(own.UID[0]), uintptr(own.UID[1]), uintptr(own.UID[2])); errno != 0 {
		return os.NewSyscallError("setresuid", errno)
	}
	if err := setCaps(own.CapEff, own.CapPrm); err != nil {
		return err
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(own.GID[0]), uintptr(own.GID[1]), uintptr(own.GID[2])); errno != 0 {
		return os.NewSyscallError("setresgid", errno)
	}
	if errno := rawSetgroups(own.Groups); errno != 0 {
		return os.NewSyscallError("setgroups", errno)
	}
	return nil
}

// setCaps sets the calling thread's effective and permitted sets
// (capset acts on the calling thread only); the inheritable set is
// emptied.
func setCaps(eff, prm uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: uint32(eff), Permitted: uint32(prm)},
		{Effective: uint32(eff >> 32), Permitted: uint32(prm >> 32)},
	}
	return os.NewSyscallError("capset", unix.Capset(&hdr, &data[0]))
}
