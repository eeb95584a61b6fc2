package testexec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
)

// Decider answers the exec calls of a filter with bpf.Options.Exec and
// hands every other call to Next.
type Decider struct {
	Next decision.Decider
	// Self is nettrap's executable, the target of the symlinks.
	Self string
	// IsGo tells whether pid is a go command whose test binaries are
	// wrapped: under `nettrap -- go test` the confined command, whose
	// parent is this nettrap; under a command run any go command under
	// no inner (IsGoProcess).
	IsGo func(pid int) bool
	// Toolchain tells whether a call of pid would count as the go
	// command's own (hub.Server.Toolchain); nil: none would.
	Toolchain func(pid int) bool
	// Outside tells whether pid is under no inner nettrap: set for a
	// command run (`nettrap -- make test`), where it enables the
	// refusals of tree.go; nil under `nettrap -- go test`.
	Outside func(pid int) bool
	// Godebug is the GODEBUG setting (nettrapcfg=HASH) every go test
	// under no inner must have, for the cache key; "" for no check.
	Godebug string
	// Messages gets why a test binary could not be wrapped.
	Messages io.Writer
}

// Quick implements decision.QuickDecider: an exec is decided here,
// from /proc and the work directory; every other call is as quick as
// Next says (not at all when Next cannot tell).
func (d *Decider) Quick(c *decision.Call) bool {
	if c.Syscall.Kind != bpf.Execve && c.Syscall.Kind != bpf.Execveat || c.Syscall.Foreign {
		q, ok := d.Next.(decision.QuickDecider)
		return ok && q.Quick(c)
	}
	return true
}

// Decide implements decision.Decider. An exec of a test binary by a
// direct child of a go command (IsGo) is wrapped (Swap) and continues;
// if the binary cannot be wrapped the exec fails with EACCES, and the go
// command reports the package as failed: a test binary never runs
// unwrapped, where its calls would count as the go command's own, or its
// pass be cached. Every other exec continues untouched, confined by the
// filter all the same, but for the refusals of checkGodebug and other.
func (d *Decider) Decide(c *decision.Call) decision.Answer {
	if c.Syscall.Kind != bpf.Execve && c.Syscall.Kind != bpf.Execveat || c.Syscall.Foreign {
		return d.Next.Decide(c)
	}
	if a, ok := d.checkGodebug(c); !ok {
		return a
	}
	parent := procfs.ParentPID(c.TID)
	if parent <= 0 {
		return decision.Allow()
	}
	path, err := execPath(c)
	if !c.Task.Pending() {
		// The caller is gone: what was read may be another task's.
		return decision.Deny(unix.ESRCH)
	}
	if err != nil {
		if !d.IsGo(parent) {
			return decision.Allow()
		}
		d.notef("cannot read the program the go command starts: %v; not starting it", err)
		return decision.Deny(unix.EACCES)
	}
	if filepath.Ext(path) != ".test" {
		return decision.Allow() // the toolchain: compile, vet, link, cgo, git …
	}
	if !d.IsGo(parent) {
		return d.other(c, path)
	}
	if !InWorkDir(path) {
		if IsTestBinary(path) {
			d.notef("the go command starts the test binary %s from outside its work directory, where nettrap does not wrap it; not starting it", path)
			return decision.Deny(unix.EACCES)
		}
		return decision.Allow()
	}
	if c.Syscall.Kind == bpf.Execveat && c.Args[4]&unix.AT_EMPTY_PATH != 0 {
		// The exec runs the file the descriptor holds, not the path: a
		// swap would not wrap it. The go command never does this.
		d.notef("the go command starts the test binary %s by descriptor, which nettrap cannot wrap; not starting it", path)
		return decision.Deny(unix.EACCES)
	}
	if err := Swap(path, d.Self); err != nil {
		d.notef("cannot run the test binary %s under nettrap: %v; not starting it", path, err)
		return decision.Deny(unix.EACCES)
	}
	return decision.Allow()
}

// other answers an exec of path by a process that is not a go command's
// child. Under `nettrap -- go test` (Toolchain) such an exec of a test
// binary from a go-build work directory is a go command that is not
// nettrap's own child (a wrapper that forks it), or a go test run by a
// test: the first would run the binary unwrapped where its calls count
// as the toolchain's, so it is refused; the second, under an inner
// nettrap, runs as the test's subprocess. Under a command run (Outside)
// it is refused when its result may be cached (refuseUnwrapped).
func (d *Decider) other(c *decision.Call, path string) decision.Answer {
	if !InWorkDir(path) {
		return decision.Allow()
	}
	if a, refused := d.refuseUnwrapped(c, path); refused {
		return a
	}
	if d.Toolchain == nil || !d.Toolchain(c.TID) {
		return decision.Allow()
	}
	d.notef("%s is started by a go command that is not nettrap's own child (a wrapper that forks it?), where nettrap cannot wrap it; not starting it: run the go command itself under nettrap, or use --cache=off", path)
	return decision.Deny(unix.EACCES)
}

func (d *Decider) notef(format string, a ...any) {
	if d.Messages != nil {
		fmt.Fprintf(d.Messages, "nettrap: "+format+"\n", a...)
	}
}

// execPath is the absolute path an execve or execveat of c names, read
// from the caller's memory. The go command calls execve with an absolute
// path; a relative one is taken against the caller's working directory
// (execve) or dirfd (execveat).
func execPath(c *decision.Call) (string, error) {
	addr, dirfd := c.Args[0], int32(unix.AT_FDCWD)
	if c.Syscall.Kind == bpf.Execveat {
		addr, dirfd = c.Args[1], int32(c.Args[0])
	}
	p, err := readString(c.TID, addr)
	if err != nil {
		return "", err
	}
	if p == "" && c.Syscall.Kind == bpf.Execveat && c.Args[4]&unix.AT_EMPTY_PATH != 0 {
		return os.Readlink(procfs.TaskPath(c.TID, fmt.Sprintf("fd/%d", dirfd)))
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	base := procfs.TaskPath(c.TID, "cwd")
	if dirfd != unix.AT_FDCWD {
		base = procfs.TaskPath(c.TID, fmt.Sprintf("fd/%d", dirfd))
	}
	dir, err := os.Readlink(base)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, p), nil
}

// readString reads a NUL-terminated path (at most PATH_MAX bytes) at
// addr in task tid, a page at a time: the string may end just before an
// unmapped page.
func readString(tid int, addr uint64) (string, error) {
	f, err := os.Open(procfs.TaskPath(tid, "mem"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readStringIn(f, addr, unix.PathMax)
}

// readStringIn reads a NUL-terminated string of at most max bytes at
// addr in the memory file f.
func readStringIn(f *os.File, addr uint64, max int) (string, error) {
	var out []byte
	page := uint64(os.Getpagesize())
	for len(out) < max {
		n := page - addr%page
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, int64(addr))
		if got == 0 && err != nil {
			return "", fmt.Errorf("read the string at %#x: %w", addr, err)
		}
		for i, b := range buf[:got] {
			if b == 0 {
				return string(append(out, buf[:i]...)), nil
			}
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return "", fmt.Errorf("the string at %#x is longer than %d bytes", addr, max)
}
