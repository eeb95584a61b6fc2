package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nettrap/nettrap/supervisor"
)

// Exit statuses of nettrap itself. Like env(1), timeout(1) and Docker:
// 125 when nettrap could not run the command (bad flags, no seccomp),
// 126 when the command is found but cannot be executed, 127 when it is
// not found.
const (
	ExitCantRun    = 125
	ExitCannotExec = 126
	ExitNotFound   = 127
)

// ExitError is how a run ends other than with status 0: Code is the
// status to exit with (the command's own, or nettrap's), Err what
// nettrap has to say about it, nil when nothing (the command's status).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// exit is the error for a command's status: nil for 0.
func exit(status int) error {
	if status == 0 {
		return nil
	}
	return &ExitError{Code: status}
}

// cantRun is nettrap's own failure, status 125.
func cantRun(format string, a ...any) error {
	return &ExitError{Code: ExitCantRun, Err: fmt.Errorf(format, a...)}
}

// cannotExec is a command that could not be run, with status code.
func cannotExec(code int, format string, a ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, a...)}
}

// lookCommand checks that argv0 names something nettrap can execute, and
// gives the status to exit with when not (0 when it can).
func lookCommand(argv0 string) (int, error) {
	_, err := exec.LookPath(argv0)
	if err == nil {
		return 0, nil
	}
	if errors.Is(err, exec.ErrDot) {
		return ExitCantRun, err
	}
	if !strings.Contains(argv0, "/") && errors.Is(err, exec.ErrNotFound) {
		// LookPath skips files on PATH that are not executable; execvp
		// and env(1) report the first of them as "permission denied".
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if dir == "" {
				dir = "."
			}
			p := filepath.Join(dir, argv0)
			if _, serr := os.Stat(p); serr == nil {
				return ExitCannotExec, fmt.Errorf("%s: %w", p, fs.ErrPermission)
			}
		}
		return ExitNotFound, fmt.Errorf("%s: command not found", argv0)
	}
	return execStatus(err), err
}

// execStatus is the status for a command that could not be started:
// 127 when it (or its script's interpreter) does not exist, 126 when it
// exists but cannot be executed, 125 for anything else.
func execStatus(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EACCES):
		return ExitCannotExec
	}
	return ExitCantRun
}

// exitStatus is the command's own status, or 128+signal when a signal
// killed it, as shells report it.
func exitStatus(cmd *exec.Cmd, err error) int {
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			return statusCode(ws)
		}
		return st.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "nettrap: wait: %v\n", err)
	return ExitCantRun
}

// sessionStatus is exitStatus of a supervised command, whichever engine
// reaped it.
func sessionStatus(sess *supervisor.Session, err error) int {
	if ws, ok := sess.WaitStatus(); ok {
		return statusCode(ws)
	}
	fmt.Fprintf(os.Stderr, "nettrap: wait: %v\n", err)
	return ExitCantRun
}

// statusCode is a wait status as a shell reports it.
func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
