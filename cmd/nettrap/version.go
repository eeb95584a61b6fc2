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
	release := ""
	if unix.Uname(&u) == nil {
		release = unix.ByteSliceToString(u.Release[:])
		fmt.Fprintf(w, "kernel: %s\n", release)
	}
	f := bpf.Detect()
	fmt.Fprintf(w, "seccomp filter: %s\n", yesNo(f.Filter))
	fmt.Fprintf(w, "seccomp user notification (SECCOMP_RET_USER_NOTIF, NEW_LISTENER): %s\n", yesNo(f.UserNotif && f.NewListener))
	fmt.Fprintf(w, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19+): %s\n", yesNo(f.WaitKillableRecv))
	fmt.Fprintf(w, "SECCOMP_RET_KILL_PROCESS: %s\n", yesNo(f.KillProcess))
	fmt.Fprintf(w, "SECCOMP_ADDFD_FLAG_SEND (5.14+; netlink sockets handed over without capabilities): %s\n",
		yesNo(atLeast(release, 5, 14)))
	fmt.Fprintln(w, sealedCoverage)
	if err := f.Check(); err != nil {
		fmt.Fprintf(w, "nettrap cannot confine here: %v\n", err)
	} else {
		fmt.Fprintln(w, "nettrap can confine here")
	}
}

// atLeast reports whether a kernel release ("6.18.44-…") is at least
// major.minor; false when it cannot be read.
func atLeast(release string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(release, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// sealedCoverage says what --sealed does not cover yet (README, "Threat
// model"): until allowed calls are made by nettrap itself, the kernel reads
// an allowed call's address again after the check.
const sealedCoverage = `--sealed: markers, --allow-test and inner nettraps cannot open anything;
  not yet covered: allowed calls (loopback, --allow rules) continue in the
  kernel, which reads the address again after the check: another thread of
  the target can change it in between, so --sealed is not yet a sandbox;
  the same holds for netlink requests sent to the kernel with an address
  where nettrap cannot borrow the socket to send them itself`

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
