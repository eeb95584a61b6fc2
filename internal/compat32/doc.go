// Package compat32 makes system calls of the host's 32-bit ABI from a
// 64-bit process: on amd64, `int $0x80` runs the i386 ABI from any
// process, and seccomp sees AUDIT_ARCH_I386 as for a 32-bit program's
// calls. bpf's listener probe makes its i386 calls with it, and so do
// the i386 victims of the supervisor's and integration's tests. An
// AArch64 process cannot make AArch32 calls: on arm64, Syscall always
// says no.
package compat32
