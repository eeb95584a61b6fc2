package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/landlock"

	"github.com/nettrap/nettrap/procfs"
)

// Why a user namespace. A network namespace the confined tree makes is
// its own, and nettrap does not check changes there. But the user
// namespace that owns a network namespace is what the kernel checks
// CAP_NET_ADMIN against, and the starting namespace and any namespace
// root makes in it are owned by the same one: root in a namespace of its
// own still holds CAP_NET_ADMIN over the starting one (a veth peer moved
// out, a macvlan or a VXLAN underlay on its interface, setns() into a
// namespace the test did not make). So where nettrap holds CAP_SYS_ADMIN
// (typically root), the command starts in a user namespace of its own,
// identity-mapped (every id means what it means outside), with a mount
// namespace of its own: root there has its capabilities only over the
// namespaces the tree makes, and the kernel refuses with EPERM every
// change to any other, whatever the tree rereads or races. Where the
// user namespace cannot be made, CAP_SYS_ADMIN leaves the bounding set
// of the forking thread instead: the tree can then neither make a
// network namespace nor enter one. Without CAP_SYS_ADMIN (not root)
// nothing is done: such a tree can only make namespaces owned by a user
// namespace of its own already.

// UsernsMode is what the user asked for (--userns).
type UsernsMode int

const (
	// UsernsAuto: a user namespace of the command's own where nettrap
	// holds CAP_SYS_ADMIN, else CAP_SYS_ADMIN dropped.
	UsernsAuto UsernsMode = iota
	// UsernsOff: the command keeps nettrap's user namespace and
	// capabilities (the hole this closes is open again).
	UsernsOff
)

// ParseUsernsMode reads "auto" or "off".
func ParseUsernsMode(s string) (UsernsMode, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return UsernsAuto, nil
	case "off":
		return UsernsOff, nil
	}
	return 0, fmt.Errorf("%q: want auto or off", s)
}

// NsMethod is how the command is kept from namespaces it did not make.
type NsMethod int

const (
	// NsUnprivileged: nettrap holds no CAP_SYS_ADMIN, nor will the tree.
	NsUnprivileged NsMethod = iota
	// NsUserns: a user and a mount namespace of the command's own.
	NsUserns
	// NsNoSysAdmin: CAP_SYS_ADMIN out of the bounding set (fallback).
	NsNoSysAdmin
	// NsOff: --userns=off where nettrap holds CAP_SYS_ADMIN.
	NsOff
)

// UsernsChoice is the method a run uses, and why.
type UsernsChoice struct {
	Method NsMethod
	// Err says why no user namespace could be made (NsNoSysAdmin).
	Err      error
	uid, gid []syscall.SysProcIDMap
	// dropNetAdmin: CAP_NET_ADMIN leaves the bounding set too (NsNoSysAdmin
	// under the ptrace engine; see ptraceDomain).
	dropNetAdmin bool
}

// String says what the tree gets, for `nettrap version`.
func (c UsernsChoice) String() string {
	switch c.Method {
	case NsUserns:
		return "user namespace: the command's own, identity-mapped, with its own mount namespace (root there acts only on namespaces it makes)"
	case NsNoSysAdmin:
		return fmt.Sprintf("user namespace: none (%v): CAP_SYS_ADMIN and CAP_SYS_PTRACE are dropped from the command's bounding set instead (it can make or enter no network namespace, nor reach nettrap)", c.Err)
	case NsOff:
		return "user namespace: off (--userns=off): root in a namespace the command makes keeps its capabilities over the starting one"
	}
	return "user namespace: not needed (nettrap holds no CAP_SYS_ADMIN)"
}

// Notice is the line said once when the user namespace falls back.
func (c UsernsChoice) Notice() string {
	return fmt.Sprintf("nettrap: cannot give the command a user namespace of its own (%v): CAP_SYS_ADMIN is dropped from its bounding set instead, so it can make or enter no network namespace", c.Err)
}

// ChooseUserns picks the method for mode here. It makes one user
// namespace to find out (a fork whose exec fails at once).
func ChooseUserns(mode UsernsMode) UsernsChoice {
	if !hasCapability(unix.CAP_SYS_ADMIN) {
		return UsernsChoice{Method: NsUnprivileged}
	}
	if mode == UsernsOff {
		return UsernsChoice{Method: NsOff}
	}
	c := UsernsChoice{Method: NsUserns}
	var err error
	if c.uid, err = readIdentityMap("uid_map"); err == nil {
		c.gid, err = readIdentityMap("gid_map")
	}
	if err == nil {
		err = probeUserns(c)
	}
	if err != nil {
		return UsernsChoice{Method: NsNoSysAdmin, Err: err}
	}
	return c
}

// readIdentityMap reads this process's /proc/self/uid_map or gid_map.
func readIdentityMap(name string) ([]syscall.SysProcIDMap, error) {
	b, err := os.ReadFile(procfs.SelfPath(name))
	if err != nil {
		return nil, err
	}
	return IdentityMappings(string(b))
}

// IdentityMappings turns a uid_map or gid_map text (lines of "inside
// outside count") into the mappings of a child user namespace in which
// each of those ids is itself: inside == outside == the id as this
// namespace sees it (the first column).
func IdentityMappings(text string) ([]syscall.SysProcIDMap, error) {
	var out []syscall.SysProcIDMap
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("id map line %q: want 3 fields", line)
		}
		var v [3]uint64
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("id map line %q: %w", line, err)
			}
			v[i] = n
		}
		if v[2] == 0 || v[0]+v[2] > 1<<32-1 { // (uid_t)-1 is never an id
			return nil, fmt.Errorf("id map line %q: bad range", line)
		}
		// SysProcIDMap holds ints: a count of 4294967295 fits on 64 bits.
		out = append(out, syscall.SysProcIDMap{ContainerID: int(v[0]), HostID: int(v[0]), Size: int(v[2])})
	}
	if len(out) == 0 {
		return nil, errors.New("empty id map")
	}
	return out, nil
}

// apply sets attr to start the command as c says.
func (c UsernsChoice) apply(attr *syscall.SysProcAttr) {
	if c.Method != NsUserns {
		return
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	attr.UidMappings, attr.GidMappings = c.uid, c.gid
	attr.GidMappingsEnableSetgroups = true
}

// prepareThread readies the calling thread, which is locked and forks
// the command, then exits (it is never handed back to the scheduler):
// under NsNoSysAdmin it drops CAP_SYS_ADMIN (and CAP_BPF, CAP_SYS_PTRACE)
// from the thread's bounding set (per thread: on exec, root's permitted set is the file's ∩ the
// bounding set) and from its inheritable set (which exec would also
// carry over; the kernel takes from the ambient set what leaves the
// inheritable one).
func (c UsernsChoice) prepareThread() error {
	if c.Method != NsNoSysAdmin {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
	}
	// CAP_BPF too: an allowed bpf attach is run by the kernel, which reads
	// its attach type again; without CAP_BPF or CAP_SYS_ADMIN no program
	// that rewrites addresses loads. (Kernels before 5.8 have no CAP_BPF:
	// EINVAL, and nothing to drop.)
	unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_BPF, 0, 0, 0)
	// CAP_SYS_PTRACE too: the tree shares nettrap's user namespace here,
	// where it would override nettrap's non-dumpability, and the thread
	// that forks the command sits in the tree's Landlock domain until the
	// command is reaped (package landlock): through its
	// /proc/PID/task/TID/mem the tree would reach nettrap's memory. A
	// test needs it for no child of its own.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
	}
	if c.dropNetAdmin {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_NET_ADMIN, 0, 0, 0); err != nil {
			return os.NewSyscallError("prctl(PR_CAPBSET_DROP)", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	data[unix.CAP_SYS_ADMIN/32].Inheritable &^= 1 << (unix.CAP_SYS_ADMIN % 32)
	data[unix.CAP_SYS_PTRACE/32].Inheritable &^= 1 << (unix.CAP_SYS_PTRACE % 32)
	if c.dropNetAdmin {
		data[unix.CAP_NET_ADMIN/32].Inheritable &^= 1 << (unix.CAP_NET_ADMIN % 32)
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	return nil
}

// probeUserns makes a user and mount namespace with c's mappings, as
// the command's start would, in a child whose exec of "/" fails with
// EACCES: that error means the namespace was made and the maps taken.
func probeUserns(c UsernsChoice) error {
	attr := &syscall.SysProcAttr{}
	c.apply(attr)
	_, err := syscall.ForkExec("/", []string{"nettrap-userns-probe"}, &syscall.ProcAttr{Sys: attr})
	if errors.Is(err, syscall.EACCES) {
		return nil
	}
	if err == nil {
		return errors.New("the probe ran")
	}
	return fmt.Errorf("clone(CLONE_NEWUSER|CLONE_NEWNS): %w", err)
}

// ptraceDomain settles c under the ptrace engine, whose netlink hand-over
// (ptrace/handover.go) makes a thread that may hold CAP_NET_ADMIN over
// the starting namespace take a socket made without capabilities from
// nettrap, with pidfd_getfd: the tree's Landlock domain refuses that
// (nettrap is outside it). Only a root tree without a user namespace of
// its own holds CAP_NET_ADMIN there. Under NsNoSysAdmin CAP_NET_ADMIN
// leaves its bounding set too (it can make no network namespace there,
// so it would act only on the starting one, whose changes nettrap
// denies), and no socket needs handing over. Under NsOff (--userns=off,
// the user's choice to keep root's capabilities, refused with --sealed;
// root in a namespace it makes reaches the starting one anyway) the
// domain stays and no socket is handed over: skipHandOver, said once on
// notices.
func ptraceDomain(plan landlock.Plan, c UsernsChoice, notices io.Writer) (_ UsernsChoice, skipHandOver bool) {
	switch {
	case c.Method == NsNoSysAdmin:
		c.dropNetAdmin = true
	case c.Method == NsOff && plan.Kind != landlock.None:
		fmt.Fprintln(notices, "nettrap: --userns=off under the ptrace engine: the command's netlink sockets keep their capabilities (handing them over would take them from nettrap, which the command's Landlock domain refuses)")
		return c, true
	}
	return c, false
}
