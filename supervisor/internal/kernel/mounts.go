package kernel

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// HideCgroups gives the calling thread, which must be locked and must
// fork the command with a user and mount namespace of its own, a mount
// namespace where every cgroup2 mount shows only dir, the command's
// cgroup: its own cgroup and those it makes below are all the tree can
// name.
//
// Why: the programs run for the sockets of the cgroup's processes, and
// root in the tree's user namespace (identity-mapped) passes the file
// permission checks of cgroup.procs: through the host's mount it could
// move itself to nettrap's cgroup, out of the programs' reach (a
// cgroup2 mounted with nsdelegate would refuse that; not every host
// mounts it so). Mounts the command's new mount namespace copies from
// this one are locked there: it cannot unmount them to see what is
// below, and it cannot mount another cgroup2 itself (that needs
// CAP_SYS_ADMIN over the owner of its cgroup namespace, the initial user
// namespace; in a cgroup namespace of its own, the new mount's root is
// its own cgroup again).
func HideCgroups(dir string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return os.NewSyscallError("unshare(CLONE_NEWNS)", err)
	}
	// Slave first: the bind mounts below must not propagate to the
	// host's namespace, and the host's still propagate here.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return os.NewSyscallError("mount(MS_SLAVE)", err)
	}
	points, err := procfs.Cgroup2Mounts()
	if err != nil {
		return fmt.Errorf("read the cgroup2 mounts: %w", err)
	}
	for _, p := range points {
		if err := unix.Mount(dir, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("show only the command's cgroup at %s: %w", p, os.NewSyscallError("mount(MS_BIND)", err))
		}
	}
	return nil
}
