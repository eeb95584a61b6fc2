package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/classify"
)

// unixCase is an address the unix victim connects to (or sends to), as
// the raw bytes of sun_path and their length (the address's less 2).
type unixCase struct {
	path  string
	dgram bool
	held  bool // its last component is a resolver socket's
	want  unix.Errno
}

// unixCases: held and refused (EPERM) where the last component is a
// resolver socket's, whatever the directories, a relative path, an
// abstract name, bytes past a NUL, the longest path; passed to the
// kernel (which finds nothing there) otherwise.
var unixCases = []unixCase{
	{path: "/nonexistent/dir/socket", held: true, want: unix.EPERM},
	{path: "/nonexistent/dir/other", want: unix.ENOENT},
	{path: "socket", held: true, want: unix.EPERM},
	{path: "/nonexistent/socket/x", want: unix.ENOENT},
	{path: "/nonexistent/sockets", want: unix.ENOENT},
	{path: "\x00/kfloor/socket", held: true, want: unix.EPERM},
	{path: "\x00kfloor-none", want: unix.ECONNREFUSED},
	{path: "/nonexistent/io.systemd.Resolve", held: true, want: unix.EPERM},
	{path: "/nonexistent/io.systemd.Resolve.Monitor", held: true, want: unix.EPERM},
	{path: "/" + strings.Repeat("d", 100) + "/socket", held: true, want: unix.EPERM},
	{path: "/nonexistent/socket\x00/other", held: true, want: unix.EPERM},
	{path: "/nonexistent/other\x00/socket", want: unix.ENOENT},
	{path: "/nonexistent/dir/socket", dgram: true, held: true, want: unix.EPERM},
	{path: "/nonexistent/dir/other", dgram: true, want: unix.ENOENT},
}

// TestHoldUnix: the unix programs hold exactly the addresses whose last
// component hashes as a resolver socket's (cgroupbpf.NameHash, computed
// here in Go), report the kernel's copy of the path, and apply the
// verdict; every other address is the kernel's at once.
func TestHoldUnix(t *testing.T) {
	needRoot(t)
	for i, c := range unixCases {
		if got := cgroupbpf.NameHash(c.path) == cgroupbpf.NameHash("socket") ||
			strings.Contains(c.path, "io.systemd.Resolve"); got != c.held {
			t.Fatalf("case %d (%q): the table says held=%v, NameHash says %v", i, c.path, c.held, got)
		}
	}
	var mu sync.Mutex
	var seen []cgroupbpf.Held
	dir := startUnixHolder(t, func(h cgroupbpf.Held) (cgroupbpf.Verdict, bool) {
		mu.Lock()
		seen = append(seen, h)
		mu.Unlock()
		return cgroupbpf.Deny(unix.EPERM), true
	})
	out := runHeld(t, dir, opUnix)
	lines := strings.Split(out, "\n")
	if len(lines) != len(unixCases) {
		t.Fatalf("victim printed %q, want %d lines", out, len(unixCases))
	}
	var wantHeld []string
	for i, c := range unixCases {
		if want := fmt.Sprintf("%d %s", i, unix.ErrnoName(c.want)); lines[i] != want {
			t.Errorf("case %d (%q, dgram %v): %q, want %q", i, c.path, c.dgram, lines[i], want)
		}
		if c.held {
			wantHeld = append(wantHeld, c.path)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, h := range seen {
		got = append(got, h.SunPath)
		if !h.Unix || h.TID == 0 || h.Cookie == 0 || h.Netns == 0 || h.Stopped {
			t.Errorf("held %+v: want a unix call with its thread, socket and namespace, not stopped", h)
		}
		if h.Type == unix.SOCK_STREAM && h.Nr != unix.SYS_CONNECT || h.Type == unix.SOCK_DGRAM && h.Nr != unix.SYS_SENDTO {
			t.Errorf("held %q reported as syscall %d (type %d)", h.SunPath, h.Nr, h.Type)
		}
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", wantHeld) {
		t.Errorf("held paths %q, want %q", got, wantHeld)
	}
}

// startUnixHolder attaches the unix programs (holding the default
// resolver sockets' names) to a cgroup of their own, served by decide.
func startUnixHolder(t *testing.T, decide func(cgroupbpf.Held) (cgroupbpf.Verdict, bool)) string {
	t.Helper()
	h, err := cgroupbpf.NewHold(cgroupbpf.HoldConfig{Deadline: testDeadline, Signal: cgroupbpf.SignalByHandler,
		UnixNames: cgroupbpf.UnixNames(classify.DefaultResolverSockets())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	// A kernel that cannot hold a call (before 6.13) skips here, before
	// the unix programs (6.7) are asked for.
	p, err := h.Program(ebpf.AttachCGroupUDP4Sendmsg)
	if err != nil {
		holdUnsupported(t, err)
	}
	p.Close()
	dir, remove, err := cgroupbpf.MakeCgroup("kfloor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	for _, at := range []ebpf.AttachType{ebpf.AttachCgroupUnixConnect, ebpf.AttachCgroupUnixSendmsg} {
		p, err := h.UnixProgram(at)
		if err != nil {
			holdUnsupported(t, err)
		}
		t.Cleanup(func() { p.Close() })
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: at, Program: p})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	rd, err := h.Reader()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(rd, nil, decide) }()
	t.Cleanup(func() {
		rd.Close()
		if err := <-served; err != nil {
			t.Errorf("serving the held calls: %v", err)
		}
	})
	return dir
}

// unixVictim tries each of unixCases in turn, printing "i ERRNO".
func unixVictim() int {
	for i, c := range unixCases {
		typ := unix.SOCK_STREAM
		if c.dgram {
			typ = unix.SOCK_DGRAM
		}
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "victim:", err)
			return 1
		}
		done := make(chan error, 1)
		go func() { done <- rawUnix(fd, c.path, c.dgram) }()
		select {
		case err = <-done:
		case <-time.After(testDeadline + 5*time.Second):
			fmt.Fprintln(os.Stderr, "victim: hung")
			return 1
		}
		unix.Close(fd)
		name := "OK"
		if err != nil {
			name = unix.ErrnoName(err.(unix.Errno))
		}
		fmt.Printf("%d %s\n", i, name)
	}
	return 0
}
