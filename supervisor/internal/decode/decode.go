package decode

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
)

// Decode fills the fields of c that come from the kernel rather than the
// target's memory: the namespace a call acts on, what a netlink send
// asks for, whom a cross-process call reaches. Each is learnt only for
// the kinds of call that need it, so that an allowed connect costs
// nothing here. It runs after the notification was found still pending:
// the tid still names the caller.
func (c *Call) Decode() {
	if c.Syscall.Kind == bpf.Socket {
		c.Socket = decision.SocketArgs{Domain: int(int32(c.Args[0])), Type: int(c.Args[1]) & 0xf, Protocol: int(int32(c.Args[2]))}
	}
	if c.Err != 0 || c.Syscall.Foreign {
		return
	}
	fd := int(int32(c.Args[0]))
	switch c.Syscall.Kind {
	case bpf.Socket:
		if c.Socket.Domain == unix.AF_NETLINK {
			c.OtherNetns = !c.inStartingNetns()
		}
	case bpf.Ioctl:
		c.OtherNetns = !c.socketInStartingNetns(fd)
	case bpf.SetSockOpt:
		if c.Netfilter {
			c.OtherNetns = !c.socketInStartingNetns(fd)
		}
	case bpf.BPF:
		c.Request = bpf.BPFCmdName(c.Args[0])
		c.OtherNetns = !c.inStartingNetns()
	case bpf.Ptrace, bpf.ProcessVMWritev, bpf.PidfdGetfd:
		c.OwnDescendant = c.reachesDescendant()
	}
	if c.Netlink != nil {
		c.NetlinkOurs, c.NetlinkChange = c.netlinkRequest()
	}
}

// reachesDescendant tells whether a cross-process call (ptrace attach,
// process_vm_writev, pidfd_getfd) aims at a descendant of the caller:
// strace -f, a debugger that started its tracee, a test harness that
// inspects its child. The caller itself counts for pidfd_getfd: a
// nettrap inside another one probes it on its own descriptors
// (ProbeEmulation). Pids in ptrace and process_vm_writev are numbers of
// the caller's pid namespace: in another one they cannot be looked up
// here, and the answer is no.
func (c *Call) reachesDescendant() bool {
	caller := c.Task.Caller()
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
		c.PidfdTarget = target
		// A pidfd of a process that exited and was reaped (fdinfo's
		// "Pid: -1") names nothing, for good: the call can only fail with
		// ESRCH, which the engines answer themselves (the descriptor
		// number may name another pidfd by the time the kernel would
		// look). A debugger, or a nettrap inside, whose child died while
		// it decided makes such calls.
		return target == procfs.PidfdReaped || target == caller.PID || procfs.IsDescendant(target, caller.PID)
	}
	return false
}
