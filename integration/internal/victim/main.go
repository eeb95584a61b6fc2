//go:debug netdns=go

// Command victim performs exactly one network operation named on its command
// line and prints one JSON line describing the outcome, so that tests can run
// it with and without nettrap and compare. See doc.go for the operations.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// result is the single line printed on stdout.
type result struct {
	Op    string          `json:"op"`
	OK    bool            `json:"ok"`
	Errno string          `json:"errno,omitempty"`
	Err   string          `json:"err,omitempty"`
	Value any             `json:"value,omitempty"`
	Child json.RawMessage `json:"child,omitempty"`
	// Signal is set when the process doing the operation was killed
	// ("SIGSEGV", "SIGSYS"); see isolated.go.
	Signal string `json:"signal,omitempty"`
}

// op is one operation: fn gets exactly nargs arguments (at least nargs when
// variadic) and returns a value to report.
type op struct {
	usage    string
	nargs    int
	variadic bool
	fn       func(args []string) (any, error)
}

// usageError makes the victim exit 3 instead of reporting a result.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		return usage("no operation given")
	}
	name, o := args[0], ops[args[0]]
	if o.fn == nil {
		return usage("unknown operation " + name)
	}
	rest := args[1:]
	if len(rest) < o.nargs || (!o.variadic && len(rest) != o.nargs) {
		return usage(fmt.Sprintf("%s takes: %s", name, o.usage))
	}
	v, err := o.fn(rest)
	var ue usageError
	if errors.As(err, &ue) {
		return usage(ue.msg)
	}
	emit(name, v, err)
	return 0
}

func emit(name string, v any, err error) {
	r := result{Op: name, OK: err == nil, Value: v}
	switch v := v.(type) {
	case childResult:
		r.Value, r.Child = nil, json.RawMessage(v)
	case relayed:
		r = result(v)
	}
	if err != nil {
		r.Err = err.Error()
		r.Errno = errnoName(err)
		var se signalError
		if errors.As(err, &se) {
			r.Signal = unix.SignalName(se.sig)
		}
	}
	b, jerr := json.Marshal(r)
	if jerr != nil {
		b, _ = json.Marshal(result{Op: name, Err: "encode result: " + jerr.Error()})
	}
	fmt.Printf("%s\n", b)
}

// errnoName returns "EPERM" etc. for an error wrapping a syscall.Errno.
func errnoName(err error) string {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return ""
	}
	if n := unix.ErrnoName(en); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(en))
}

func usage(msg string) int {
	fmt.Fprintf(os.Stderr, "victim: %s\nusage: victim OP ARGS...\n", msg)
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %s %s\n", n, ops[n].usage)
	}
	return 3
}

// payload marks what a fake host receives, so records show who sent them.
func payload(op string) []byte { return []byte("victim:" + op) }

func sysErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return os.NewSyscallError(name, err)
}

func joinArgs(a []string) string { return strings.Join(a, " ") }
