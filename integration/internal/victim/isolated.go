package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// envChild names the operation an isolated child copy of the victim runs.
const envChild = "VICTIM_ISOLATED_OP"

// signalError reports that the process doing the operation was killed.
type signalError struct {
	sig    syscall.Signal
	detail string
}

func (e signalError) Error() string {
	return unix.SignalName(e.sig) + ": " + e.detail
}

// relayed is a child's complete result, printed as the victim's own.
type relayed result

// isolated runs fn in a child copy of the victim, so that an operation that
// can kill the process — int 0x80 faults with SIGSEGV when the kernel has
// IA32 emulation off, a seccomp filter may kill with SIGSYS — still gets a
// JSON line, with "signal" set, instead of a crash.
func isolated(fn func([]string) (any, error)) func([]string) (any, error) {
	return func(args []string) (any, error) {
		name := os.Args[1]
		if os.Getenv(envChild) == name {
			return fn(args)
		}
		cmd := exec.Command("/proc/self/exe", append([]string{name}, args...)...)
		cmd.Env = append(os.Environ(), envChild+"="+name, "GOTRACEBACK=none")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err := cmd.Run()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, signalError{ws.Signal(), "operation process killed; " + firstLine(stderr.String())}
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return nil, usageError{strings.TrimPrefix(firstLine(stderr.String()), "victim: ")}
		}
		if err != nil {
			return nil, fmt.Errorf("isolated %s: %w: %s", name, err, firstLine(stderr.String()))
		}
		var r result
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
			return nil, fmt.Errorf("isolated %s: bad output %q: %w", name, out.String(), err)
		}
		return relayed(r), nil
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return "no output"
	}
	return s
}
