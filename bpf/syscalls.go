package bpf

import (
	"fmt"
	"sync/atomic"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// Kind says which intercepted operation a syscall is.
type Kind int

// Kinds of syscall. The zero value is Other, so an unknown syscall is
// never mistaken for an intercepted one.
const (
	Other Kind = iota
	Connect
	SendTo
	SendMsg
	SendMMsg
	Socket
	IOUringSetup
	SocketCall // i386 (and old-ABI arm) multiplexer: socket, connect, sendto... in one nr
	// Cross-process access: a confined process that attaches to, writes
	// into or borrows descriptors from an unconfined process of the same
	// user could make that process do its networking.
	Ptrace          // ptrace(PTRACE_ATTACH or PTRACE_SEIZE) only
	ProcessVMWritev // process_vm_writev
	PidfdGetfd      // pidfd_getfd
	// SetSockOpt: setsockopt(2) of one of TrappedSockOpts (source
	// routes, interface pinning, multicast joins): options that change
	// where an allowed send goes, or send something by themselves.
	SetSockOpt
	// Ioctl: ioctl(2) with one of NetnsIoctls (routes, addresses,
	// interfaces, ARP, bridges, tunnels): changes to a network namespace.
	Ioctl
	// BPF: bpf(2) BPF_PROG_ATTACH or BPF_LINK_CREATE, which may attach a
	// program that rewrites socket addresses or redirects packets.
	BPF
	// Execve and Execveat are trapped only with Options.Exec: the go
	// command's test binaries are wrapped as they are started (see
	// package testexec).
	Execve
	Execveat
)

var kindNames = [...]string{
	Other:           "other",
	Connect:         "connect",
	SendTo:          "sendto",
	SendMsg:         "sendmsg",
	SendMMsg:        "sendmmsg",
	Socket:          "socket",
	IOUringSetup:    "io_uring_setup",
	SocketCall:      "socketcall",
	Ptrace:          "ptrace",
	ProcessVMWritev: "process_vm_writev",
	PidfdGetfd:      "pidfd_getfd",
	SetSockOpt:      "setsockopt",
	Ioctl:           "ioctl",
	BPF:             "bpf",
	Execve:          "execve",
	Execveat:        "execveat",
}

// String returns the syscall name the kind stands for ("other" for Other).
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Call describes one (arch, nr) pair as seen in a seccomp notification.
type Call struct {
	Name    string // syscall name in that ABI, or "syscall N" when unknown
	Kind    Kind
	Foreign bool   // not the native 64-bit ABI (i386, x32, arm, or an unknown arch)
	ABI     string // "x86_64", "i386", "x32", "aarch64", "arm"; "" for an unknown arch
}

// x32Bit is __X32_SYSCALL_BIT: x32 shares AUDIT_ARCH_X86_64 with x86_64
// and is told apart only by this bit in nr.
const x32Bit = 0x40000000

// ABI names.
const (
	abiX8664   = "x86_64"
	abiI386    = "i386"
	abiX32     = "x32"
	abiAArch64 = "aarch64"
	abiARM     = "arm"
)

// trap is one intercepted syscall number of one ABI.
type trap struct {
	nr   uint32
	kind Kind
}

// abiInfo is what the program and Lookup need to know about one ABI.
// The numbers come from the kernel's syscall tables (cited per ABI) and are
// cross-checked against go-seccomp-bpf's tables in the tests. They are not
// read from the library's name->number maps because its x32 table names
// two numbers "sendmsg" (46 and 518), so that map is ambiguous.
type abiInfo struct {
	name    string
	audit   uint32
	foreign bool
	names   map[int]string // nr -> name, for Lookup (go-seccomp-bpf tables)
	traps   []trap         // numbers that go to the supervisor unconditionally
	// looked memoizes Lookup by number (without x32's bit): every
	// trapped call is looked up, and the answer never changes.
	looked [memoNrs]atomic.Pointer[Call]
}

// memoNrs bounds the numbers Lookup memoizes: every number of a trapped
// call in each ABI is below it.
const memoNrs = 512

// i386: arch/x86/entry/syscalls/syscall_32.tbl. Every kind the native ABI
// traps is trapped here too (TestEveryKindTrapped): a 32-bit static
// program reaches these entry points with `int 0x80` from any process.
var abiI386Info = &abiInfo{
	name: abiI386, audit: unix.AUDIT_ARCH_I386, foreign: true,
	names: arch.I386.SyscallNumbers,
	traps: []trap{
		{102, SocketCall}, {359, Socket}, {362, Connect}, {369, SendTo},
		{370, SendMsg}, {345, SendMMsg}, {425, IOUringSetup},
		{26, Ptrace}, {348, ProcessVMWritev}, {438, PidfdGetfd}, {366, SetSockOpt},
		{54, Ioctl}, {357, BPF},
	},
}

// x32: arch/x86/entry/syscalls/syscall_64.tbl, "common" and "x32" rows,
// plus the "64"-only sendmsg (46), sendmmsg (307), ptrace (101),
// process_vm_writev (311), setsockopt (54) and ioctl (16): kernels before 5.4
// shared one table between x86_64 and x32, so an x32 caller could reach the
// 64-bit entries too. All of them carry x32Bit.
var abiX32Info = &abiInfo{
	name: abiX32, audit: unix.AUDIT_ARCH_X86_64, foreign: true,
	names: arch.X32.SyscallNumbers,
	traps: []trap{
		{x32Bit | 41, Socket}, {x32Bit | 42, Connect}, {x32Bit | 44, SendTo},
		{x32Bit | 518, SendMsg}, {x32Bit | 46, SendMsg},
		{x32Bit | 538, SendMMsg}, {x32Bit | 307, SendMMsg},
		{x32Bit | 425, IOUringSetup},
		{x32Bit | 521, Ptrace}, {x32Bit | 101, Ptrace},
		{x32Bit | 540, ProcessVMWritev}, {x32Bit | 311, ProcessVMWritev},
		{x32Bit | 438, PidfdGetfd},
		{x32Bit | 541, SetSockOpt}, {x32Bit | 54, SetSockOpt},
		{x32Bit | 514, Ioctl}, {x32Bit | 16, Ioctl}, {x32Bit | 321, BPF},
	},
}

// x86_64: arch/x86/entry/syscalls/syscall_64.tbl. socket, sendto,
// setsockopt, ptrace, ioctl and bpf are decided by arguments (see
// program.go); the others are unconditional.
var abiX8664Info = &abiInfo{
	name: abiX8664, audit: unix.AUDIT_ARCH_X86_64,
	names: arch.X86_64.SyscallNumbers,
	traps: []trap{
		{41, Socket}, {42, Connect}, {44, SendTo}, {46, SendMsg},
		{307, SendMMsg}, {425, IOUringSetup},
		{101, Ptrace}, {311, ProcessVMWritev}, {438, PidfdGetfd}, {54, SetSockOpt},
		{16, Ioctl}, {321, BPF},
	},
}

// arm (EABI, the only 32-bit ABI arm64 runs): arch/arm/tools/syscall.tbl.
// 102 is socketcall in the old ABI only (arm64's compat table maps it to
// sys_ni_syscall), but it is trapped anyway: some vendor kernels re-enable
// socketcall for EABI, and trapping a dead number costs nothing.
var abiARMInfo = &abiInfo{
	name: abiARM, audit: unix.AUDIT_ARCH_ARM, foreign: true,
	names: arch.ARM.SyscallNumbers,
	traps: []trap{
		{102, SocketCall}, {281, Socket}, {283, Connect}, {290, SendTo},
		{296, SendMsg}, {374, SendMMsg}, {425, IOUringSetup},
		{26, Ptrace}, {377, ProcessVMWritev}, {438, PidfdGetfd}, {294, SetSockOpt},
		{54, Ioctl}, {386, BPF},
	},
}

// aarch64: include/uapi/asm-generic/unistd.h.
var abiAArch64Info = &abiInfo{
	name: abiAArch64, audit: unix.AUDIT_ARCH_AARCH64,
	names: arch.AARCH64.SyscallNumbers,
	traps: []trap{
		{198, Socket}, {203, Connect}, {206, SendTo}, {211, SendMsg},
		{269, SendMMsg}, {425, IOUringSetup},
		{117, Ptrace}, {271, ProcessVMWritev}, {438, PidfdGetfd}, {208, SetSockOpt},
		{29, Ioctl}, {280, BPF},
	},
}

// nrOf returns the number of the trapped syscall of the given kind. The
// first entry wins (x32 lists the x32-specific number first).
func (a *abiInfo) nrOf(k Kind) uint32 {
	for _, t := range a.traps {
		if t.kind == k {
			return t.nr
		}
	}
	panic(fmt.Sprintf("bpf: %s has no %v", a.name, k))
}

// target is one native architecture the program can be built for.
type target struct {
	native *abiInfo
	compat *abiInfo
	x32    *abiInfo // nil where there is no x32
}

var targets = map[string]target{
	"amd64": {native: abiX8664Info, compat: abiI386Info, x32: abiX32Info},
	"arm64": {native: abiAArch64Info, compat: abiARMInfo},
}

// Lookup maps a notification's (arch, nr) to what it is. It knows all five
// ABIs whatever the host, since the pair alone names the syscall.
func Lookup(auditArch uint32, nr int32) Call {
	a := abiFor(auditArch, uint32(nr))
	if a == nil {
		return Call{Name: fmt.Sprintf("syscall %d", nr), Foreign: true}
	}
	bare := uint32(nr) &^ x32BitIf(a)
	if bare >= memoNrs {
		return lookupIn(a, nr)
	}
	if c := a.looked[bare].Load(); c != nil {
		return *c
	}
	c := lookupIn(a, nr)
	a.looked[bare].Store(&c)
	return c
}

// lookupIn is Lookup in ABI a.
func lookupIn(a *abiInfo, nr int32) Call {
	c := Call{Kind: Other, Foreign: a.foreign, ABI: a.name}
	for _, traps := range [][]trap{a.traps, execTraps[a.name]} {
		for _, t := range traps {
			if t.nr == uint32(nr) {
				c.Kind = t.kind
				c.Name = t.kind.String()
				return c
			}
		}
	}
	if name, ok := a.names[int(uint32(nr)&^x32BitIf(a))]; ok {
		c.Name = name
	} else {
		c.Name = fmt.Sprintf("syscall %d", nr)
	}
	return c
}

func x32BitIf(a *abiInfo) uint32 {
	if a == abiX32Info {
		return x32Bit
	}
	return 0
}

func abiFor(auditArch, nr uint32) *abiInfo {
	switch auditArch {
	case unix.AUDIT_ARCH_X86_64:
		if nr&x32Bit != 0 {
			return abiX32Info
		}
		return abiX8664Info
	case unix.AUDIT_ARCH_I386:
		return abiI386Info
	case unix.AUDIT_ARCH_AARCH64:
		return abiAArch64Info
	case unix.AUDIT_ARCH_ARM:
		return abiARMInfo
	}
	return nil
}
