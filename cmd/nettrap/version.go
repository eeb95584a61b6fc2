package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
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
	fmt.Fprintf(w, "seccomp user notification: %v\n", yesNo(f.UserNotif))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
