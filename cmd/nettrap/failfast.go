package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// failFast makes the tracker of tb stop the binary as -test.failfast
// would (see killTestBinary).
func failFast(tb *testBinary) {
	var ino uint64
	if fi, err := tb.w.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
	}
	tb.tracker.FailFast(func() {
		if err := killTestBinary(ino); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: -test.failfast: could not stop the test binary: %v\n", err)
		}
	})
}

// killTestBinary kills the test binary under -test.failfast once a test
// that nettrap failed has ended and another starts (gotest.Tracker.FailFast).
// The binary is the child of this process whose stdout is the output pipe
// (pipeIno, its inode): nettrap starts it, and it alone holds the pipe
// among our children. The child is opened as a pidfd and checked after
// opening, so that a reused pid is never signalled. SIGKILL, as a test
// binary (or its TestMain) may catch SIGINT and SIGTERM; the tests that
// would have run are not started, as under -failfast, but TestMain's code
// after m.Run does not run either.
func killTestBinary(pipeIno uint64) error {
	pids, err := children()
	if err != nil {
		return err
	}
	want := "pipe:[" + strconv.FormatUint(pipeIno, 10) + "]"
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		if !isOurs(pid, want) {
			unix.Close(fd)
			continue
		}
		err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
		if err != nil && err != unix.ESRCH {
			return os.NewSyscallError("pidfd_send_signal", err)
		}
		return nil
	}
	return errors.New("no child of nettrap writes to the test output")
}

// children lists the children of this process: of every thread, as a
// child belongs to the thread that started it.
func children() ([]int, error) {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		return nil, fmt.Errorf("list child processes: %w", errors.Join(err, os.ErrNotExist))
	}
	var pids []int
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// isOurs: pid is still a child of this process and writes to the pipe.
func isOurs(pid int, pipe string) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
		return false
	}
	link, err := os.Readlink(dir + "/fd/1")
	return err == nil && link == pipe
}
