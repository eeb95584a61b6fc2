package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/kernel"
)

// initPidNs is the initial PID namespace (PROC_PID_INIT_INO).
const initPidNs = "pid:[4026531836]"

// ErrNoKernelEngine wraps every reason the kernel engine cannot work.
var ErrNoKernelEngine = kernel.ErrUnavailable

// chooseKernel is ChooseEngine for --engine=kernel: the notify engine
// must work (it decides every call but the sends), and the kernel must
// load and attach the programs.
func chooseKernel(c EngineChoice) (EngineChoice, error) {
	if c.NotifyErr != nil {
		return c, fmt.Errorf("%w: %w: %w", ErrUnsupported, ErrNoKernelEngine, c.NotifyErr)
	}
	if err := ProbeKernel(); err != nil {
		return c, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	c.Engine = EngineKernel
	return c, nil
}

// ProbeKernel tells whether the kernel engine can work here, and why not
// (for `nettrap version`).
func ProbeKernel() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it needs root (CAP_BPF and CAP_NET_ADMIN in the initial user namespace)", ErrNoKernelEngine)
	}
	// The programs name threads by the initial PID namespace's ids
	// (bpf_get_current_pid_tgid): nettrap's own calls and the held
	// callers are told apart and found by those.
	if ns, err := os.Readlink("/proc/self/ns/pid"); err != nil || ns != initPidNs {
		return fmt.Errorf("%w: nettrap is not in the initial PID namespace (%s), whose pids the programs report", ErrNoKernelEngine, ns)
	}
	return kernel.Probe()
}

// kernelStart readies the kernel engine before the command starts: the
// run must be one it serves, the filter leaves the native sends to the
// kernel, and the command starts in the engine's cgroup. The caller
// releases the engine if the start fails.
func (s *Session) kernelStart(cmd *exec.Cmd, opts Options, emu *emulate.Emulator) ([]unix.SockFilter, *kernel.Engine, error) {
	switch {
	case opts.Sealed || opts.SealedNetns != nil:
		return nil, nil, fmt.Errorf("%w: --sealed needs the notify engine (what it allows is checked against the tree's own sockets by nettrap, per call)", ErrNoKernelEngine)
	case s.Userns.Method != NsUserns:
		return nil, nil, fmt.Errorf("%w: it needs the command in a user namespace of its own (%s), else it keeps CAP_NET_ADMIN over the cgroup's programs", ErrNoKernelEngine, s.Userns)
	}
	ke, err := kernel.New(kernel.Config{Decider: opts.Decider, Stats: &s.Stats, Errs: &s.errs, Tree: true,
		ResolverSockets: opts.resolverSockets()})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoKernelEngine, err)
	}
	// The native connect and sends are the programs' to decide.
	prog, err := bpf.AssembleWith(runtime.GOARCH, bpf.Options{Exec: opts.TrapsExec, KernelSends: true, KernelConnects: true})
	if err != nil {
		ke.Stop()
		return nil, nil, fmt.Errorf("build seccomp program: %w", err)
	}
	if emu != nil {
		emu.AllowedOut = ke.AllowedOut
	}
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
		cmd.SysProcAttr = attr
	}
	attr.UseCgroupFD, attr.CgroupFD = true, ke.CgroupFD()
	// A cgroup namespace rooted at the command's cgroup, made by the
	// child once it is there (after clone, in its own user namespace):
	// its /proc/PID/cgroup then says "/", as the cgroup2 mounts it sees
	// show it (kernel.HideCgroups).
	attr.Unshareflags |= unix.CLONE_NEWCGROUP
	return prog, ke, nil
}

// resolverSockets are o.ResolverSockets, or classify's defaults.
func (o Options) resolverSockets() []string {
	if o.ResolverSockets != nil {
		return o.ResolverSockets
	}
	return classify.DefaultResolverSockets()
}
