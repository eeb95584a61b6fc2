package bpf

// Options are the filter's optional traps.
type Options struct {
	// Exec also sends the native ABI's execve and execveat to the
	// supervisor (`nettrap -- go test` with the test cache: the go
	// command's test binaries are wrapped as they start).
	//
	// Only the native ABI: what must be caught is the go command's own
	// start of a test binary, made by its (native) pre-exec child. An
	// exec through a 32-bit ABI comes from a 32-bit program, which the go
	// command is not, and is left alone: the program it starts is
	// confined by the same filter all the same, only not wrapped.
	Exec bool
	// Trace builds the ptrace engine's program: SECCOMP_RET_TRACE where
	// the notify engine's notifies, and seccomp(2) refused a listener
	// (see traceProgram).
	Trace bool
	// KernelSends leaves the native ABI's sendto, sendmsg and sendmmsg
	// to the kernel: the kernel engine's cgroup programs decide them on
	// the kernel's own copy of each destination (package cgroupbpf), and
	// the filter, which sees registers only, cannot tell a loopback send
	// from another. A sendto with a netlink address's length still goes
	// up (kernelSendtoRule). The 32-bit ABIs' are trapped (and denied)
	// still.
	KernelSends bool
	// KernelConnects leaves the native ABI's connect to the kernel as
	// well: the kernel engine's connect programs (inet, and unix from
	// 6.7) decide it on the kernel's copy of the address. Only with
	// KernelSends.
	KernelConnects bool
}

// untrapped are the native calls o leaves to the kernel.
func (o Options) untrapped() map[Kind]bool {
	if !o.KernelSends {
		return nil
	}
	return map[Kind]bool{SendMsg: true, SendMMsg: true, Connect: o.KernelConnects}
}

// execTraps are the exec calls of each native ABI: arch/x86/entry/
// syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
var execTraps = map[string][]trap{
	abiX8664:   {{59, Execve}, {322, Execveat}},
	abiAArch64: {{221, Execve}, {281, Execveat}},
}

// extraTraps are the numbers the native policy traps beyond its own.
func (o Options) extraTraps(native *abiInfo) []uint32 {
	if !o.Exec {
		return nil
	}
	var nrs []uint32
	for _, t := range execTraps[native.name] {
		nrs = append(nrs, t.nr)
	}
	return nrs
}
