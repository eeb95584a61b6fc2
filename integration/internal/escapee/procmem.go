package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/procmem"
)

// procMem is the attack of issue 35 (package procmem) on target: "go",
// "reaper", "waker" or a pid. It prints procmem's Result as its line
// instead of the usual one.
func procMem(target, dst, marker string, steal []string) {
	res := procmem.Result{}
	pid, err := procmem.Find(target)
	if err != nil {
		res.Steps = []procmem.Step{{Name: procmem.StepFind, Err: err.Error()}}
	} else {
		o := procmem.Options{Marker: marker}
		if o.Dst, err = netip.ParseAddrPort(dst); err != nil {
			usage()
		}
		if len(steal) > 0 {
			if o.StealFD, err = strconv.Atoi(steal[0]); err != nil {
				usage()
			}
		}
		if len(steal) > 1 {
			o.StealMarker = steal[1]
		}
		res = procmem.Attack(pid, o)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("%s\n", b)
}

// idle is a victim of the kind of nettrap's helpers: "read" blocks reading
// stdin with the signals the reaper ignores ignored (run/reaper.go), as the
// reaper reads its pipe; "pause" pauses forever, as the ptrace engine's
// waker does. It prints its pid first.
func idle(kind string) {
	fmt.Printf("%d\n", os.Getpid())
	switch kind {
	case "read":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
		io.ReadAll(os.Stdin)
	case "pause":
		for {
			unix.Pause()
		}
	default:
		usage()
	}
	os.Exit(0)
}
