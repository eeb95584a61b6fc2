package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Like env(1), timeout(1) and Docker: 127 when the command is not found,
// 126 when it is found but cannot be executed. 125 stays nettrap's own.
const (
	exitCannotExec = 126
	exitNotFound   = 127
)

// lookCommand checks that argv0 names something nettrap can execute, and
// gives the status to exit with when not (0 when it can).
func lookCommand(argv0 string) (int, error) {
	_, err := exec.LookPath(argv0)
	if err == nil {
		return 0, nil
	}
	if errors.Is(err, exec.ErrDot) {
		return exitCantRun, err
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
				return exitCannotExec, fmt.Errorf("%s: %w", p, fs.ErrPermission)
			}
		}
		return exitNotFound, fmt.Errorf("%s: command not found", argv0)
	}
	return execStatus(err), err
}

// execStatus is the status for a command that could not be started:
// 127 when it (or its script's interpreter) does not exist, 126 when it
// exists but cannot be executed, 125 for anything else.
func execStatus(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return exitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EACCES):
		return exitCannotExec
	}
	return exitCantRun
}

// cannotExec reports a command that could not be run, with status code.
func cannotExec(code int, format string, a ...any) int {
	if code == exitCantRun {
		return cantRun(format, a...)
	}
	fmt.Fprintf(os.Stderr, "nettrap: %s\n", fmt.Sprintf(format, a...))
	return code
}
