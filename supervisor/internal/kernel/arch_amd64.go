package kernel

import "golang.org/x/sys/unix"

// nativeAudit is the ABI of the calls the programs see (a 32-bit one's
// are trapped, and denied, by the filter).
const nativeAudit = unix.AUDIT_ARCH_X86_64
