package emulate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// Unix path names through the caller's /proc/self (issue 37).
//
// /proc/self and /proc/thread-self are symlinks the kernel resolves for
// whoever walks them: made by nettrap, a connect or send naming
// /proc/self/fd/N would reach nettrap's descriptor N, not the caller's.
// Programs name their own descriptors so (a socket file held open with
// O_PATH, a directory whose socket's full path would not fit in
// sun_path), and so does nettrap itself (its pins, --sealed; a relative
// name made from its copy of the caller's working directory,
// viaProcCwd): an inner nettrap's calls, which an outer nettrap traps
// and makes again, name the inner's descriptors. Made by the outer as
// named, they reached the outer's own descriptors: ECONNREFUSED or
// ENOENT as root, EACCES as nobody (a descriptor of the outer's that is
// no socket nobody may write to).
//
// So a name /proc/self/fd/N (or /proc/thread-self/fd/N), followed by
// nothing or by a relative rest, is resolved as the caller's: nettrap
// opens the caller's descriptor N through its own /proc (O_PATH, as it
// opens the caller's working directory), and the call names that copy
// instead: /proc/self/fd/M from nettrap's root (the file itself; the
// caller's credentials still decide whether it may write to it), or the
// rest relative to M, from the caller's root (the rest walks from the
// directory N names, and ".." and absolute symlinks meet the caller's
// root, as in the kernel). Only where the caller's /proc is a proc file
// system's root (its "self" is then the caller, as nettrap's /proc/PID
// is), and only for a call that names one path; any other name through
// the caller's /proc/self (its cwd, root, a path of more than one
// message) cannot be made as the caller would make it (Cannot). A name
// that reaches /proc/self through a symlink of the caller's, or from a
// working directory in /proc, is not recognised: it is resolved as
// nettrap's, as before.

// procSelf is a name through the caller's /proc/self.
type procSelf struct {
	thread bool   // /proc/thread-self
	fd     int    // the caller's descriptor
	rest   string // what follows fd/N, relative ("" for none)
}

// errProcSelf: a name through the caller's /proc/self that nettrap
// cannot resolve as the caller's.
var errProcSelf = errors.New("a unix path through the caller's /proc/self that nettrap cannot resolve as the caller's")

// parseProcSelf tells whether path goes through /proc/self or
// /proc/thread-self, read as the kernel walks it (empty and "."
// components skipped); through with err nil: it is /proc/self/fd/N, or
// that followed by a relative rest, kept as written (a rest of slashes
// alone is ".": N must then be a directory).
func parseProcSelf(path string) (p procSelf, through bool, err error) {
	if !strings.HasPrefix(path, "/") {
		return p, false, nil
	}
	// The first four components, and what follows them.
	var comps []string
	rest := path
	for len(comps) < 4 {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			break
		}
		c, after, found := strings.Cut(rest, "/")
		if c != "." {
			comps = append(comps, c)
		}
		if !found {
			rest = ""
			break
		}
		rest = "/" + after
	}
	if len(comps) < 2 || comps[0] != "proc" || (comps[1] != "self" && comps[1] != "thread-self") {
		return p, false, nil
	}
	p.thread = comps[1] == "thread-self"
	if len(comps) < 4 || comps[2] != "fd" || !fdName(comps[3]) {
		return p, true, errProcSelf
	}
	p.fd, _ = strconv.Atoi(comps[3])
	if rest != "" {
		if p.rest = strings.TrimLeft(rest, "/"); p.rest == "" {
			p.rest = "." // fd/N/: N must be a directory
		}
	}
	return p, true, nil
}

// fdName tells whether s names a descriptor in /proc/PID/fd: decimal,
// no sign, no leading zero (as the kernel's name_to_int reads it).
func fdName(s string) bool {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= 1<<31-1
}

// callerProcSelf resolves c's name through the caller's /proc/self as
// the caller's (see the top of this file), editing c's message and x.
// via is how the call is then made (x, or x.Pinned()); fds are nettrap's
// copies to close after the call. errno ends the call as the kernel
// would (no such descriptor, not a directory).
func callerProcSelf(c *Call, x *ascaller.Ctx) (via *ascaller.Ctx, fds []int, errno unix.Errno, err error) {
	via = x
	named, at := 0, -1
	var p procSelf
	for i, m := range c.Msgs {
		if len(m.Name) <= 2 || binary.NativeEndian.Uint16(m.Name) != unix.AF_UNIX || m.Name[2] == 0 {
			continue
		}
		named++
		q, through, perr := parseProcSelf(sockdiag.UnixName(m.Name[2:]))
		if !through {
			continue
		}
		if perr != nil {
			return nil, nil, 0, perr
		}
		at, p = i, q
	}
	if at < 0 {
		return via, nil, 0, nil
	}
	if named > 1 {
		return nil, nil, 0, fmt.Errorf("%w: one of the call's several names", errProcSelf)
	}
	if err := callerProcIsProc(c.TID); err != nil {
		return nil, nil, 0, err
	}
	tgid, err := procfs.ThreadGroup(c.TID)
	if err != nil {
		return nil, nil, 0, ErrGone
	}
	link := procfs.TaskPath(tgid, "fd/"+strconv.Itoa(p.fd))
	if p.thread {
		link = procfs.TaskPath(tgid, "task/"+strconv.Itoa(c.TID)+"/fd/"+strconv.Itoa(p.fd))
	}
	flags := unix.O_PATH | unix.O_CLOEXEC
	if p.rest != "" {
		flags |= unix.O_DIRECTORY
	}
	fd, oerr := unix.Open(link, flags, 0)
	switch oerr {
	case nil:
	case unix.ENOENT, unix.ENOTDIR:
		return nil, nil, oerr.(unix.Errno), nil
	default:
		return nil, nil, 0, fmt.Errorf("%w: %w", errProcSelf, os.NewSyscallError("open", oerr))
	}
	m := &c.Msgs[at]
	if p.rest == "" {
		m.Name = procSelfFd(fd)
		return x.Pinned(), []int{fd}, 0, nil
	}
	// The rest walks from the directory: it is the working directory of
	// the call (the name was absolute: x has none of the caller's).
	if x.Cwd >= 0 {
		unix.Close(x.Cwd)
	}
	x.Cwd = fd
	name := make([]byte, 2, 2+len(p.rest)+1)
	binary.NativeEndian.PutUint16(name, unix.AF_UNIX)
	m.Name = append(append(name, p.rest...), 0)
	return via, nil, 0, nil
}

// callerProcIsProc checks that the caller's /proc is the root of a proc
// file system, where its "self" is itself.
func callerProcIsProc(tid int) error {
	path := procfs.TaskPath(tid, "root/proc")
	var fs unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Statfs(path, &fs); err != nil {
		return fmt.Errorf("%w: %w", errProcSelf, os.NewSyscallError("statfs", err))
	}
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("%w: %w", errProcSelf, os.NewSyscallError("stat", err))
	}
	if fs.Type != unix.PROC_SUPER_MAGIC || st.Ino != procRootIno {
		return fmt.Errorf("%w: its /proc is not a proc file system's root", errProcSelf)
	}
	return nil
}

// procRootIno is the inode number of a proc file system's root
// (PROC_ROOT_INO).
const procRootIno = 1
