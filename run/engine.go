package run

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor"
)

// startError is the status and message for a command the supervisor
// could not start: 125 with the real reason when nettrap cannot confine
// it, else the status of a command that cannot be executed.
func startError(o Options, err error) error {
	switch {
	case errors.Is(err, supervisor.ErrNoEmulation):
		return cantRun("%v; %s needs it (Linux 5.6+; in a container, Docker's default seccomp profile allows pidfd_getfd only with --cap-add SYS_PTRACE)", err, emulationNeededBy(o))
	case errors.Is(err, supervisor.ErrUnsupported), errors.Is(err, supervisor.ErrNoPtrace):
		// ErrNoPtrace alone: the ptrace engine was chosen, then refused
		// (PTRACE_SEIZE under Yama's admin-only mode, say).
		return confineError(o, err)
	}
	return cannotExec(execStatus(err), "cannot start %s: %v", o.Argv[0], err)
}

// confineError says why no engine that --engine allows can confine here,
// and what would.
func confineError(o Options, err error) error {
	engine := o.Names.Source("engine")
	// supervisor.ErrUnsupported speaks of notification, which is not the
	// reason when ptrace was asked for; the reason follows it.
	reason := strings.TrimPrefix(err.Error(), supervisor.ErrUnsupported.Error()+": ")
	switch {
	case errors.Is(err, supervisor.ErrNoKernelEngine):
		return cantRun("cannot confine with the kernel engine: %s; %s=auto uses seccomp user notification", strings.TrimPrefix(reason, supervisor.ErrNoKernelEngine.Error()+": "), engine)
	case errors.Is(err, supervisor.ErrNoPtrace) && o.Engine == supervisor.EnginePtraceOnly:
		return cantRun("cannot confine with the ptrace engine: %s; %s=auto uses seccomp user notification where the kernel has it", reason, engine)
	case errors.Is(err, supervisor.ErrNoPtrace):
		// auto: neither engine works, and each said why.
		return cantRun("cannot confine: %v", err)
	case errors.Is(err, bpf.ErrListenerAbove):
		return cantRun("cannot confine: %s; %s=ptrace (or auto) confines there", reason, engine)
	case o.Engine == supervisor.EngineNotifyOnly:
		return cantRun("cannot confine: %v; the notify engine needs Linux 5.0+ with seccomp user notification, and a container runtime that allows seccomp(2); %s=ptrace (or auto) confines without it", err, engine)
	}
	return cantRun("cannot confine: %v; nettrap needs Linux 5.0+ with seccomp user notification (or ptrace), and a container runtime that allows seccomp(2)", err)
}

// emulationNeededBy names what made emulation required.
func emulationNeededBy(o Options) string {
	if o.Policy.Sealed {
		return o.Names.Source("sealed")
	}
	return o.Names.Source("emulate") + "=on"
}

// chooseEngine is the engine of a run that starts no supervisor itself
// but whose nettraps each do (go test -exec): it fails, as Start would,
// when none can confine. Where auto falls back to ptrace it says so once,
// on notices (where the summary goes), and returns "ptrace" for the inner
// nettraps (which then do not each say it again); else "", for --engine
// as given.
func chooseEngine(o Options, notices io.Writer) (inner string, err error) {
	c, err := supervisor.ChooseEngine(o.Engine)
	if err != nil {
		return "", confineError(o, err)
	}
	if c.Engine != supervisor.EnginePtrace || o.Engine != supervisor.EngineAuto {
		return "", nil
	}
	c = c.Sealing(o.Policy.Sealed) // the inners' Start does the same
	// supervisor.Start's notice, which the inners would each print.
	fmt.Fprintln(notices, c.FallbackNotice())
	return c.Engine.String(), nil
}
