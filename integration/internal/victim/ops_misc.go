package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// lookup resolves with the pure Go resolver (see the go:debug line in
// main.go), which reads /etc/resolv.conf and queries its nameservers.
func lookup(args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	return net.DefaultResolver.LookupHost(ctx, args[0])
}

// lookupTXT is lookup for TXT records (grpc-go's service config lookup).
func lookupTXT(args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	return net.DefaultResolver.LookupTXT(ctx, args[0])
}

func unixPath(args []string) (any, error) {
	return unixConnect(args[0])
}

func unixAbstract(args []string) (any, error) {
	return unixConnect("@" + args[0]) // x/sys/unix maps a leading @ to a NUL
}

func unixConnect(name string) (any, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, sysErr("socket", err)
	}
	defer unix.Close(fd)
	return nil, sysErr("connect", unix.Connect(fd, &unix.SockaddrUnix{Name: name}))
}

func socketpair([]string) (any, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, sysErr("socketpair", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[0], []byte("ping")); err != nil {
		return nil, sysErr("write", err)
	}
	buf := make([]byte, 8)
	n, err := unix.Read(fds[1], buf)
	return string(buf[:max(n, 0)]), sysErr("read", err)
}

func netlinkInterfaces([]string) (any, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ifs))
	for i, ifi := range ifs {
		names[i] = ifi.Name
	}
	return names, nil
}

// goroutineConnect connects from a goroutine that is guaranteed to run on
// another OS thread than main: the caller's thread is locked first.
func goroutineConnect(args []string) (any, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type out struct {
		tid int
		err error
	}
	ch := make(chan out)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, err := tcpConnect(args)
		ch <- out{unix.Gettid(), err}
	}()
	o := <-ch
	return map[string]int{"main_tid": unix.Gettid(), "tid": o.tid}, o.err
}

// manyLoopback connects n times at once and reports how many succeeded.
func manyLoopback(args []string) (any, error) {
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return nil, usageError{fmt.Sprintf("bad count %q", args[0])}
	}
	var ok atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", args[1], ioTimeout)
			if err == nil {
				ok.Add(1)
				_ = c.Close()
				return
			}
			mu.Lock()
			firstErr = cmpOr(firstErr, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return ok.Load(), firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// childResult is a child's stdout that was a JSON line: reported as "child".
type childResult []byte

// execProg runs PROG ARGS as a child (fork+exec, which inherits any
// confinement), passes its stderr through and reports its stdout.
func execProg(args []string) (any, error) {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, err
	}
	line := bytes.TrimSpace(out.Bytes())
	var v any
	if json.Valid(line) {
		v = childResult(line)
	} else {
		v = string(line)
	}
	if err != nil {
		return v, fmt.Errorf("%s: %w", joinArgs(args), err)
	}
	return v, nil
}
