package procfs_test

import (
	"os"
	"slices"
	"testing"

	"github.com/nettrap/nettrap/procfs"
)

func TestReadCreds(t *testing.T) {
	c, err := procfs.ReadCreds(procfs.SelfPath("status"))
	if err != nil {
		t.Fatal(err)
	}
	if c.UID[0] != os.Getuid() || c.UID[1] != os.Geteuid() || c.GID[0] != os.Getgid() || c.GID[1] != os.Getegid() {
		t.Errorf("ReadCreds: uids %v gids %v, want real/effective %d/%d and %d/%d",
			c.UID, c.GID, os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(groups)
	if got := slices.Sorted(slices.Values(c.Groups)); !slices.Equal(got, groups) {
		t.Errorf("ReadCreds: groups %v, want %v", got, groups)
	}
	if c.CapEff&^c.CapPrm != 0 {
		t.Errorf("ReadCreds: effective %x outside permitted %x", c.CapEff, c.CapPrm)
	}
	if !c.Same(c) {
		t.Error("Same: not the same as itself")
	}
	o := c
	o.Groups = append(slices.Clone(c.Groups), 4242)
	if c.Same(o) {
		t.Error("Same: another group list is the same")
	}
	if _, err := procfs.ReadCreds(procfs.TaskPath(1<<30, "status")); err == nil {
		t.Error("ReadCreds of no task: no error")
	}
}
