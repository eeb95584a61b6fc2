package main

import "golang.org/x/sys/unix"

const nativeArch = unix.AUDIT_ARCH_X86_64
