package namespace

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
)

// maxUsernsDepth bounds a walk up the user namespaces (the kernel nests
// at most 32).
const maxUsernsDepth = 33

// treeUserns is the user namespace nettrap made for the command, and
// nettrap's own.
type treeUserns struct {
	id, own procfs.NsID
	ok      bool
}

// SetTree learns the command's user namespace from its first process,
// pid: the level right below nettrap's own, whatever the process nested
// in since.
func (ns *Starting) SetTree(pid int) {
	var own procfs.NsID
	var err error
	plainthread.Run(func() { own, err = procfs.Namespace(procfs.ThreadSelfPath("ns/user")) })
	if err != nil {
		return
	}
	fd, err := unix.Open(procfs.TaskPath(pid, "ns/user"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var below procfs.NsID
	walkUserns(fd, func(id procfs.NsID) bool {
		if id == own {
			return true
		}
		below = id
		return false
	})
	if below != (procfs.NsID{}) {
		ns.tree = treeUserns{id: below, own: own, ok: true}
	}
}

// walkUserns calls f with the user namespace fd names, then with each of
// its parents, until f returns true or the parent cannot be seen. It
// closes fd.
func walkUserns(fd int, f func(procfs.NsID) bool) {
	for depth := 0; depth < maxUsernsDepth; depth++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || f(procfs.NsID{Dev: st.Dev, Ino: st.Ino}) {
			break
		}
		// EPERM above nettrap's own namespace: the walk ends there.
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		if err != nil {
			break
		}
		unix.Close(fd)
		fd = parent
	}
	unix.Close(fd)
}

// HasTree tells whether the command's user namespace is known: without
// it no namespace is the tree's.
func (ns *Starting) HasTree() bool { return ns != nil && ns.tree.ok }

// ownsNetns tells whether the network namespace nsfd names belongs to
// the tree: its owner is the command's user namespace or one below it.
func (ns *Starting) ownsNetns(nsfd int) bool {
	if ns == nil || !ns.tree.ok {
		return false
	}
	u, err := unix.IoctlRetInt(nsfd, unix.NS_GET_USERNS)
	if err != nil {
		return false
	}
	owned := false
	walkUserns(u, func(id procfs.NsID) bool {
		owned = id == ns.tree.id
		return owned || id == ns.tree.own
	})
	return owned
}

// OwnsSocket tells whether socket sfd (nettrap's copy) is of a
// namespace of the tree's.
func (ns *Starting) OwnsSocket(sfd int) bool {
	if ns == nil || !ns.tree.ok {
		return false
	}
	nsfd, err := unix.IoctlRetInt(sfd, unix.SIOCGSKNS)
	if err != nil {
		return false
	}
	defer unix.Close(nsfd)
	return ns.ownsNetns(nsfd)
}

// OwnsThread tells whether thread tid is in a namespace of the tree's
// (where a socket it makes now will be). It cannot change namespace
// while it is stopped in a call.
func (ns *Starting) OwnsThread(tid int) bool {
	if ns == nil || !ns.tree.ok {
		return false
	}
	nsfd, err := unix.Open(procfs.TaskPath(tid, "ns/net"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(nsfd)
	return ns.ownsNetns(nsfd)
}
