package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor"
)

// version is set at build time with -ldflags "-X main.version=…"; else the
// module version from the build info is used.
var version = ""

func printVersion(w io.Writer) {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(w, "nettrap %s %s/%s\n", v, runtime.GOOS, runtime.GOARCH)
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		fmt.Fprintf(w, "kernel: %s\n", unix.ByteSliceToString(u.Release[:]))
	}
	f := bpf.Detect()
	fmt.Fprintf(w, "seccomp filter: %s\n", yesNo(f.Filter))
	fmt.Fprintf(w, "seccomp user notification (SECCOMP_RET_USER_NOTIF, NEW_LISTENER): %s\n", yesNo(f.UserNotif && f.NewListener))
	fmt.Fprintf(w, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19+): %s\n", yesNo(f.WaitKillableRecv))
	fmt.Fprintf(w, "SECCOMP_RET_KILL_PROCESS: %s\n", yesNo(f.KillProcess))
	if err := supervisor.ProbeEmulation(); err != nil {
		fmt.Fprintf(w, "emulation: off (%v): allowed calls continue in the kernel; --sealed refuses to run\n", err)
	} else {
		fmt.Fprintln(w, "emulation: on (pidfd_getfd): allowed inet connects and sends are made by nettrap with the address it checked")
	}
	if err := f.Check(); err != nil {
		fmt.Fprintf(w, "nettrap cannot confine here: %v\n", err)
	} else {
		fmt.Fprintln(w, "nettrap can confine here")
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
