package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
	"github.com/nettrap/nettrap/supervisor/internal/ptrace"
)

// Engine is how the supervisor learns of the calls its filter traps.
type Engine int

const (
	// EngineNotify: seccomp user notification (SECCOMP_RET_USER_NOTIF and
	// a listener fd). The first choice: cheapest, and the kernel stops
	// only the trapped calls.
	EngineNotify Engine = iota + 1
	// EnginePtrace: the filter returns SECCOMP_RET_TRACE and nettrap is
	// the tracer of every confined process (internal/ptrace). For where a
	// listener is refused: a listener above nettrap already holds the
	// chain's one (EBUSY), or the kernel lacks user notification.
	EnginePtrace
	// EngineKernel: the notify engine, with the native sends left to the
	// kernel, where cgroup BPF programs pass loopback and hold every
	// other destination for the same decider (internal/kernel). Asked for
	// only (--engine=kernel): root, cgroup v2, and a kernel whose cgroup
	// programs can hold a call.
	EngineKernel
)

func (e Engine) String() string {
	switch e {
	case EngineNotify:
		return "notify"
	case EnginePtrace:
		return "ptrace"
	case EngineKernel:
		return "kernel"
	}
	return fmt.Sprintf("engine(%d)", int(e))
}

// EngineMode is what the user asked for (--engine).
type EngineMode int

const (
	// EngineAuto uses notification where a listener can be installed, and
	// ptrace otherwise.
	EngineAuto EngineMode = iota
	// EngineNotifyOnly uses notification or fails.
	EngineNotifyOnly
	// EnginePtraceOnly uses ptrace or fails.
	EnginePtraceOnly
	// EngineKernelOnly uses the kernel engine or fails.
	EngineKernelOnly
)

// ParseEngineMode reads "auto", "notify", "ptrace" or "kernel".
func ParseEngineMode(s string) (EngineMode, error) {
	switch s {
	case "auto", "":
		return EngineAuto, nil
	case "notify":
		return EngineNotifyOnly, nil
	case "ptrace":
		return EnginePtraceOnly, nil
	case "kernel":
		return EngineKernelOnly, nil
	}
	return 0, fmt.Errorf("engine: %q is not auto, notify, ptrace or kernel", s)
}

// EngineChoice is the engine a run would use, and why.
type EngineChoice struct {
	Engine Engine
	// NotifyErr says why the notify engine cannot work here (nil when it
	// can): with EngineAuto, why ptrace was chosen.
	NotifyErr error
	// ListenerAbove: a filter above nettrap has a listener. Its
	// USER_NOTIF outranks TRACE (the kernel takes the strongest action of
	// the chain), so a call it traps never reaches a TRACE stop: the
	// ptrace engine then decides at syscall-entry stops, which come
	// before seccomp (internal/ptrace).
	ListenerAbove bool
	// Listener is what ChooseEngine's probe saw of that listener's
	// filter (bpf.ProbeHidden), ProbeErr why it could not look.
	Listener bpf.ListenerProbe
	ProbeErr error
	// EntryStops: the ptrace engine stops every syscall at entry and runs
	// nettrap's program on it in user space. Under a listener above, when
	// the probe saw it hide a call nettrap traps, could not look, or
	// under --sealed (Start sets it then): a filter that reads argument
	// registers may hide calls the probe did not make. Otherwise the
	// TRACE stops of nettrap's filter are all the engine needs.
	EntryStops bool
}

// Sealing is c for a run whose policy is --sealed (sealed true): under a
// listener above, the ptrace engine then stops every syscall at entry,
// whatever the probe saw (a filter that reads arguments may hide calls
// the probe did not make, and nothing inside may widen access). Start
// applies it, and so does whoever says c's notice for a run (go test
// -exec's outer nettrap).
func (c EngineChoice) Sealing(sealed bool) EngineChoice {
	if sealed && c.Engine == EnginePtrace && c.ListenerAbove {
		c.EntryStops = true
	}
	return c
}

// method says how the ptrace engine decides under a listener above.
func (c EngineChoice) method() string {
	switch {
	case c.ProbeErr != nil:
		return fmt.Sprintf("what it hides could not be probed (%v): calls are decided at syscall-entry stops", c.ProbeErr)
	case c.EntryStops:
		return c.Listener.String() + ": calls are decided at syscall-entry stops"
	}
	return c.Listener.String() + ": calls are decided at seccomp stops (at syscall-entry stops under --sealed)"
}

// String says which engine and why, for `nettrap version` and the
// one-line notice of a fallback.
func (c EngineChoice) String() string {
	switch {
	case c.Engine == EngineNotify:
		return "notify (seccomp user notification)"
	case c.Engine == EngineKernel:
		return "kernel (asked for: seccomp user notification, with connects and sends to loopback passed by cgroup BPF programs in the kernel and every other destination held there for nettrap)"
	case c.NotifyErr != nil && c.ListenerAbove:
		return fmt.Sprintf("ptrace (%v; %s)", unwrapSyscall(c.NotifyErr), c.method())
	case c.NotifyErr != nil:
		return fmt.Sprintf("ptrace (seccomp user notification unavailable: %v%s)", unwrapSyscall(c.NotifyErr), c.hiddenAnyway())
	}
	return "ptrace (asked for" + c.hiddenAnyway() + ")"
}

// hiddenAnyway says, where no listener above was seen, that the probe
// found calls hidden all the same (a filter above whose listener the
// kernel's EBUSY did not show), or could not look.
func (c EngineChoice) hiddenAnyway() string {
	if !c.EntryStops || os.Getenv(entryStopsEnv) != "" {
		return ""
	}
	return "; a filter above: " + c.method()
}

// FallbackNotice is the one line that says auto fell back to ptrace.
func (c EngineChoice) FallbackNotice() string {
	if c.EntryStops {
		return fmt.Sprintf("nettrap: seccomp user notification cannot be used here (%v): confining with the ptrace engine, stopping every syscall at entry, which costs more per call (`nettrap version` says why)", unwrapSyscall(c.NotifyErr))
	}
	return fmt.Sprintf("nettrap: seccomp user notification cannot be used here (%v): confining with the ptrace engine, which costs more per call", unwrapSyscall(c.NotifyErr))
}

// unwrapSyscall shortens the listener probe's error for a one-line
// reason: the sentence without the syscall that told it.
func unwrapSyscall(err error) string {
	if err == nil {
		return "no reason recorded"
	}
	if errors.Is(err, bpf.ErrListenerAbove) {
		return bpf.ErrListenerAbove.Error()
	}
	return err.Error()
}

// ChooseEngine picks the engine for mode, probing the kernel and the
// filters nettrap runs under. It fails, wrapping ErrUnsupported, when no
// engine mode allows can confine here: the command must then not run.
func ChooseEngine(mode EngineMode) (EngineChoice, error) {
	notifyErr := bpf.ProbeListener()
	c := EngineChoice{NotifyErr: notifyErr, ListenerAbove: errors.Is(notifyErr, bpf.ErrListenerAbove)}
	if mode == EngineKernelOnly {
		return chooseKernel(c)
	}
	if mode != EnginePtraceOnly && notifyErr == nil {
		c.Engine = EngineNotify
		return c, nil
	}
	if mode == EngineNotifyOnly {
		return c, fmt.Errorf("%w: %w", ErrUnsupported, notifyErr)
	}
	if err := ProbePtrace(); err != nil {
		if notifyErr != nil {
			return c, fmt.Errorf("%w: %w; and the ptrace engine cannot work either: %w", ErrUnsupported, notifyErr, err)
		}
		return c, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	c.Engine = EnginePtrace
	// Probed whatever made ptrace the choice: a filter above may trap
	// with a listener where the kernel's EBUSY did not say so (a profile
	// that refuses NEW_LISTENER for its own reasons first).
	c.Listener, c.ProbeErr = bpf.ProbeHidden(runtime.GOARCH)
	c.EntryStops = needEntryStops(c.Listener, c.ProbeErr, notifyErr)
	if os.Getenv(entryStopsEnv) != "" {
		c.EntryStops = true
	}
	return c, nil
}

// needEntryStops tells whether the ptrace engine must stop every syscall
// at entry, from what the probe saw (p, or probeErr why it could not
// look) and the listener probe's notifyErr. A call the probe saw hidden,
// or no probe, takes them. An ABI the probe cannot make calls of (arm on
// an arm64 machine that runs AArch32 programs: an AArch64 process cannot
// make their calls) counts as hidden only where a listener may be above:
// where nettrap could install one (notifyErr nil, --engine=ptrace asked
// for) the kernel says none is (it allows one per filter chain), and no
// other action that outranks TRACE (KILL, TRAP, ERRNO) lets the call run.
func needEntryStops(p bpf.ListenerProbe, probeErr, notifyErr error) bool {
	if probeErr != nil || p.Hidden != "" {
		return true
	}
	return len(p.Unprobed) > 0 && notifyErr != nil
}

// entryStopsEnv, set to anything, makes the ptrace engine stop every
// syscall at entry whatever the probe saw: a test-only switch, for the
// benchmarks to weigh the two methods in one run.
const entryStopsEnv = "NETTRAP_TEST_ENTRY_STOPS"

// ErrNoPtrace wraps every reason the ptrace engine cannot work here.
var ErrNoPtrace = ptrace.ErrNoPtrace

// ProbePtrace tells whether this process may trace its children: the
// kernel has SECCOMP_RET_TRACE, Yama allows it, and no seccomp profile
// refuses ptrace(2). A request on a pid that cannot exist answers ESRCH
// where ptrace is allowed, EPERM (or ENOSYS) where a profile refuses it.
func ProbePtrace() error {
	if !bpf.ActionAvailable(unix.SECCOMP_RET_TRACE) {
		return fmt.Errorf("%w: the kernel lacks SECCOMP_RET_TRACE", ErrNoPtrace)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "3":
			return fmt.Errorf("%w: kernel.yama.ptrace_scope is 3 (no process may trace another)", ErrNoPtrace)
		case "2":
			if !hasCapability(unix.CAP_SYS_PTRACE) {
				return fmt.Errorf("%w: kernel.yama.ptrace_scope is 2 (only CAP_SYS_PTRACE may trace)", ErrNoPtrace)
			}
		}
	}
	const noSuchPid = 1 << 30 // above PID_MAX_LIMIT (4M)
	if _, err := unix.PtraceGetEventMsg(noSuchPid); err != unix.ESRCH {
		return fmt.Errorf("%w: %w (a seccomp profile refusing ptrace: with Docker, --cap-add SYS_PTRACE)", ErrNoPtrace, os.NewSyscallError("ptrace", err))
	}
	return nil
}

// hasCapability tells whether this process holds capability c
// (effective); no when it cannot be told.
func hasCapability(c int) bool {
	var has bool
	var err error
	plainthread.Run(func() { has, err = procfs.HasCapability(procfs.ThreadSelfPath("status"), "CapEff", c) })
	return err == nil && has
}
