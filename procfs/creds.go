package procfs

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// Creds are a task's credentials as its status file shows them, in the
// reader's user namespace.
type Creds struct {
	UID, GID [4]int // real, effective, saved, filesystem
	Groups   []int  // supplementary groups, in the kernel's (sorted) order
	CapEff   uint64
	CapPrm   uint64
}

// ReadCreds reads the credentials of a status file (TaskPath(tid,
// "status"), ThreadSelfPath("status")).
func ReadCreds(status string) (Creds, error) {
	b, err := os.ReadFile(status)
	if err != nil {
		return Creds{}, err
	}
	var c Creds
	seen := 0
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		f := bytes.Fields(val)
		switch string(key) {
		case "Uid", "Gid":
			if len(f) != 4 {
				return Creds{}, fmt.Errorf("procfs: %s in %s: %q", key, status, val)
			}
			dst := &c.UID
			if key[0] == 'G' {
				dst = &c.GID
			}
			for i := range dst {
				if dst[i], err = strconv.Atoi(string(f[i])); err != nil {
					return Creds{}, fmt.Errorf("procfs: %s in %s: %w", key, status, err)
				}
			}
		case "Groups":
			c.Groups = make([]int, 0, len(f))
			for _, g := range f {
				n, err := strconv.Atoi(string(g))
				if err != nil {
					return Creds{}, fmt.Errorf("procfs: Groups in %s: %w", status, err)
				}
				c.Groups = append(c.Groups, n)
			}
		case "CapEff", "CapPrm":
			if len(f) != 1 {
				return Creds{}, fmt.Errorf("procfs: %s in %s: %q", key, status, val)
			}
			v, err := strconv.ParseUint(string(f[0]), 16, 64)
			if err != nil {
				return Creds{}, fmt.Errorf("procfs: %s in %s: %w", key, status, err)
			}
			if key[3] == 'E' {
				c.CapEff = v
			} else {
				c.CapPrm = v
			}
		default:
			continue
		}
		if seen++; seen == 5 {
			return c, nil
		}
	}
	return Creds{}, fmt.Errorf("procfs: credentials missing from %s", status)
}

// Same tells whether c and o are the same identity: ids, groups and
// effective capabilities (what a permission check or a peer's
// credentials are made of).
func (c Creds) Same(o Creds) bool {
	return c.UID == o.UID && c.GID == o.GID && c.CapEff == o.CapEff && slices.Equal(c.Groups, o.Groups)
}
