package guard

import (
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor"
)

// ownDescendant tells whether a cross-process call (ptrace attach,
// process_vm_writev, pidfd_getfd) aims at a descendant of the caller:
// strace -f, a debugger that started its tracee, a test harness that
// inspects its child. A descendant of a confined process is confined too
// (filters are inherited and cannot be dropped), so nothing is gained;
// only other processes (the go command, a shell) must be out of reach.
// The caller itself is in reach too: a nettrap inside another one probes
// pidfd_getfd on its own descriptors (supervisor.ProbeEmulation).
// Pids in ptrace and process_vm_writev are numbers of the caller's pid
// namespace: in another one they cannot be looked up here, and the call
// stays denied.
func ownDescendant(c *supervisor.Call) bool {
	caller := c.Caller()
	if caller.Gone {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Ptrace:
		return procfs.SamePIDNamespace(c.TID) && procfs.IsDescendant(int(int32(c.Args[1])), caller.PID)
	case bpf.ProcessVMWritev:
		return procfs.SamePIDNamespace(c.TID) && procfs.IsDescendant(int(int32(c.Args[0])), caller.PID)
	case bpf.PidfdGetfd:
		target := procfs.PidfdTarget(c.TID, int(int32(c.Args[0])))
		return target == caller.PID || procfs.IsDescendant(target, caller.PID)
	}
	return false
}
