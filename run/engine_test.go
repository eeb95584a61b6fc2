package run

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor"
)

// flagNames spells every setting as its flag.
type flagNames struct{}

func (flagNames) Source(k string) string                  { return "--" + k }
func (flagNames) Var(k string) string                     { return "NETTRAP_" + strings.ToUpper(k) }
func (flagNames) InnerEnv(env []string, _ Inner) []string { return env }

// Where no engine can confine, the message gives the real reason (as
// supervisor.ChooseEngine wraps it) and what would work; status 125.
func TestStartErrorReasons(t *testing.T) {
	busy := fmt.Errorf("%w: %w", bpf.ErrListenerAbove, os.NewSyscallError("seccomp", syscall.EBUSY))
	noPtrace := fmt.Errorf("%w: kernel.yama.ptrace_scope is 3", supervisor.ErrNoPtrace)
	noNotif := fmt.Errorf("bpf: seccomp user notification: %w", os.NewSyscallError("seccomp", syscall.EINVAL))
	for _, tc := range []struct {
		name      string
		mode      supervisor.EngineMode
		err       error
		want, not string
		code      int
	}{
		{"listener above, notify only", supervisor.EngineNotifyOnly, fmt.Errorf("%w: %w", supervisor.ErrUnsupported, busy),
			"cannot confine: a seccomp listener is already installed above nettrap (WSL2 mirrored networking does this): seccomp: device or resource busy; --engine=ptrace (or auto) confines there",
			"Linux 5.0", ExitCantRun},
		{"ptrace refused, ptrace only", supervisor.EnginePtraceOnly, fmt.Errorf("%w: %w", supervisor.ErrUnsupported, noPtrace),
			"cannot confine with the ptrace engine: the ptrace engine is unavailable: kernel.yama.ptrace_scope is 3; --engine=auto",
			"notification unavailable", ExitCantRun},
		{"neither, auto", supervisor.EngineAuto, fmt.Errorf("%w: %w; and the ptrace engine cannot work either: %w", supervisor.ErrUnsupported, busy, noPtrace),
			"cannot confine: seccomp user notification unavailable: a seccomp listener is already installed above nettrap (WSL2 mirrored networking does this): seccomp: device or resource busy; and the ptrace engine cannot work either: the ptrace engine is unavailable: kernel.yama.ptrace_scope is 3",
			"Linux 5.0", ExitCantRun},
		{"no notification, notify only", supervisor.EngineNotifyOnly, fmt.Errorf("%w: %w", supervisor.ErrUnsupported, noNotif),
			"cannot confine: seccomp user notification unavailable: bpf: seccomp user notification: seccomp: invalid argument; the notify engine needs Linux 5.0+",
			"WSL2", ExitCantRun},
		{"seize refused, auto", supervisor.EngineAuto, fmt.Errorf("%w: %w", supervisor.ErrNoPtrace, os.NewSyscallError("ptrace(PTRACE_SEIZE)", syscall.EPERM)),
			"cannot confine: the ptrace engine is unavailable: ptrace(PTRACE_SEIZE): operation not permitted", "cannot start", ExitCantRun},
		{"not found", supervisor.EngineAuto, &os.PathError{Op: "fork/exec", Path: "/x", Err: syscall.ENOENT},
			"cannot start /x: fork/exec /x: no such file or directory", "confine", ExitNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := startError(Options{Argv: []string{"/x"}, Engine: tc.mode, Names: flagNames{}}, tc.err)
			var e *ExitError
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
				t.Errorf("startError = %v (%#v)\nwant status %d, %q and no %q", err, e, tc.code, tc.want, tc.not)
			}
		})
	}
}
