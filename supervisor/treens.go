package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
)

// Network namespaces the confined tree made.
//
// Where the command runs in a user namespace of its own (userns.go), every
// network namespace its tree makes is owned by that user namespace or one
// below it, and the kernel refuses the tree any change to a namespace it
// did not make: no veth peer, VXLAN, macvlan or moved device can lead
// out of one of these, and no process of the tree can enter another. What
// a socket of such a namespace reaches is in the tree's own namespaces,
// so a connect or send there, and a packet socket made there, leaves
// nothing behind: it is allowed (class own-netns, audited). A namespace
// qualifies by its owner, which never changes: one that a process outside
// the tree owns (the starting namespace, a container's, a rootless
// runtime's) never does, and without the user namespace (--userns=off,
// the fallback, an unprivileged nettrap) none does.
//
// A socket is asked for its own namespace (SIOCGSKNS), not its caller's:
// a socket made in the starting namespace stays there wherever its
// holder goes. The descriptor number is looked up again by the kernel,
// so such a connect or send is allowed only when nettrap makes it itself,
// and the emulator checks the socket it borrowed again (emulate.go).

// maxUsernsDepth bounds a walk up the user namespaces (the kernel nests
// at most 32).
const maxUsernsDepth = 33

// treeUserns is the user namespace nettrap made for the command, and
// nettrap's own.
type treeUserns struct {
	id, own procfs.NsID
	ok      bool
}

// setTree learns the command's user namespace from its first process,
// pid: the level right below nettrap's own, whatever the process nested
// in since.
func (ns *startingNetns) setTree(pid int) {
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

// ownsNetns tells whether the network namespace nsfd names belongs to
// the tree: its owner is the command's user namespace or one below it.
func (ns *startingNetns) ownsNetns(nsfd int) bool {
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

// ownsSocket tells whether socket sfd (nettrap's copy) is of a
// namespace of the tree's.
func (ns *startingNetns) ownsSocket(sfd int) bool {
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

// ownsThread tells whether thread tid is in a namespace of the tree's
// (where a socket it makes now will be). It cannot change namespace
// while it is stopped in a call.
func (ns *startingNetns) ownsThread(tid int) bool {
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

// treeNetns answers Task.TreeNetns for c (see task.TreeNetns).
func (c *call) treeNetns() bool {
	if c.netns == nil || !c.netns.tree.ok || c.Syscall.Foreign || c.Err != 0 {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Socket:
		return c.netns.ownsThread(c.TID)
	case bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg:
		if !c.emulating {
			return false // the kernel would look the descriptor up again
		}
		sfd, err := c.borrow(int(int32(c.Args[0])))
		if err != nil {
			return false
		}
		defer unix.Close(sfd)
		return c.netns.ownsSocket(sfd)
	}
	return false
}
