// Package landlock puts a confined command in a Landlock domain of its
// own, so that nothing in the confined tree can act on a process outside
// it: the kernel refuses every ptrace-mode access from inside a domain to
// a process that is not in it or in a domain nested below it (opening
// /proc/PID/mem or /proc/PID/environ, process_vm_readv and writev,
// pidfd_getfd, ptrace attach), whatever the caller's capabilities and
// whatever Yama says. Landlock ABI 6 (Linux 6.12) also scopes signals:
// kill from inside reaches only the domain and what is nested in it.
//
// nettrap's helpers (the reaper, the ptrace engine's waker), nettrap
// itself, the go command of `nettrap -- go test` (whose test binaries sit
// in a domain nested below its own) and every process of the user
// outside the tree are then out of reach of the tests.
//
// A domain must handle at least one access right, and what it handles
// changes what the tree may do. Choose picks, per kernel:
//
//   - ABI 6 and later: signals scoped, nothing else handled. The tree's
//     filesystem access, mounts included, is as it was. Both modes.
//   - ABI 2 to 5: two filesystem rights (REFER, MAKE_BLOCK), both given
//     back on / by a rule, so that files behave as before; but the kernel
//     refuses mount, umount and pivot_root to any domain that handles a
//     filesystem right. Only under --sealed, which gives those up for
//     untrusted code; the default mode goes without.
//   - ABI 1 (5.13 to 5.18) refuses renames across directories to every
//     domain, and no domain keeps them: not used.
//
// Only the calling thread is restricted (landlock_restrict_self without
// TSYNC): nettrap restricts the locked thread that forks the command and
// lets that thread die, as it does with the seccomp filter.
package landlock
