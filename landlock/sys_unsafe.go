package landlock

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// abiVersion is landlock_create_ruleset(NULL, 0, VERSION): the ABI.
func abiVersion() (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, os.NewSyscallError("landlock_create_ruleset", errno)
	}
	return int(r), nil
}

// createRuleset passes the first size bytes of attr: the struct as the
// kernel of that ABI knows it (it refuses unknown non-zero fields).
func createRuleset(attr *unix.LandlockRulesetAttr, size uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), size, 0)
	if errno != 0 {
		return -1, os.NewSyscallError("landlock_create_ruleset", errno)
	}
	return int(r), nil
}

// addPathRule grants access beneath the directory dir holds.
func addPathRule(ruleset, dir int, access uint64) error {
	// The kernel's struct is packed (12 bytes); x/sys's has the same
	// fields at the same offsets, and the kernel reads 12 bytes.
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(dir)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("landlock_add_rule", errno)
	}
	return nil
}

// restrictSelf puts the calling thread in the ruleset's domain.
func restrictSelf(ruleset int) error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0)
	if errno != 0 {
		return os.NewSyscallError("landlock_restrict_self", errno)
	}
	return nil
}
