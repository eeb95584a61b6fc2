package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/run"
	"github.com/nettrap/nettrap/supervisor"
)

// version is set at build time with -ldflags "-X main.version=…"; else the
// module version from the build info is used.
var version = ""

// printVersion writes the version, the kernel features nettrap uses, and
// the engine a run with mode (--engine) would use here.
func printVersion(w io.Writer, mode supervisor.EngineMode, userns supervisor.UsernsMode) {
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
	fmt.Fprintf(w, "SECCOMP_RET_KILL_PROCESS: %s\n", yesNo(f.KillProcess))
	for _, kf := range supervisor.KernelFeatures() {
		fmt.Fprintln(w, kf)
	}
	printEngine(w, f, mode)
	fmt.Fprintln(w, supervisor.ChooseUserns(userns))
	fmt.Fprintln(w, sealedNetnsLine(mode, userns))
	fmt.Fprintln(w, landlockLine(landlock.Choose(false), landlock.Choose(true)))
}

// landlockLine says which Landlock domain the confined tree gets here in
// each mode (docs/threat-model.md).
func landlockLine(plain, sealed landlock.Plan) string {
	if plain == sealed {
		return "tree domain: " + plain.String()
	}
	return "tree domain: " + plain.String() + "; under --sealed: " + sealed.String()
}

// sealedNetnsLine says what --sealed does about local peers here: a
// network namespace of the command's own (made once to find out), or
// the per-call checks, and why.
func sealedNetnsLine(mode supervisor.EngineMode, userns supervisor.UsernsMode) string {
	ns, err := run.NewSealedNetns(mode, userns)
	if err != nil {
		return fmt.Sprintf("--sealed: no network namespace of the command's own (%v): unix and loopback peers are checked per call", err)
	}
	ns.Close()
	return "--sealed: a network namespace of the command's own, with only lo (what --allow opens is reached by nettrap and handed in; unix socket files are checked per call)"
}

// printEngine writes whether allowed calls are emulated, and the engine a
// run with mode would use here and why, or why none can confine.
func printEngine(w io.Writer, f bpf.Features, mode supervisor.EngineMode) {
	if err := supervisor.ProbeEmulation(); err != nil {
		fmt.Fprintf(w, "emulation: off (%v): allowed calls, and netlink requests sent with an address, continue in the kernel; --sealed refuses to run\n", err)
	} else {
		fmt.Fprintln(w, "emulation: on (pidfd_getfd): allowed inet connects and sends, and netlink requests sent with an address, are made by nettrap with the bytes it checked")
	}
	choice, err := supervisor.ChooseEngine(mode)
	fmt.Fprintln(w, engineLine(choice, err))
	if mode != supervisor.EngineKernelOnly {
		fmt.Fprintln(w, kernelEngineLine(supervisor.ProbeKernel()))
	}
	if err == nil && (!f.Filter || !f.KillProcess) {
		// Both engines need these; f.Check's other reason (no user
		// notification) is the engine's to judge.
		err = f.Check()
	}
	if err != nil {
		fmt.Fprintf(w, "nettrap cannot confine here: %v\n", err)
	} else {
		fmt.Fprintln(w, "nettrap can confine here")
	}
}

// engineLine is the version's line on the engine: which one and why, or
// none and why not.
func engineLine(c supervisor.EngineChoice, err error) string {
	if err != nil && c.NotifyErr == nil {
		// Only ptrace was allowed, and it failed: ErrUnsupported's words
		// (notification unavailable) are not the reason here.
		return "engine: none (" + strings.TrimPrefix(err.Error(), supervisor.ErrUnsupported.Error()+": ") + ")"
	}
	if err != nil {
		return fmt.Sprintf("engine: none (%v)", err)
	}
	return "engine: " + c.String()
}

// kernelEngineLine says whether --engine=kernel would work here, and
// why not.
func kernelEngineLine(err error) string {
	if err != nil {
		return "kernel engine (--engine=kernel): no (" + strings.TrimPrefix(err.Error(), supervisor.ErrNoKernelEngine.Error()+": ") + ")"
	}
	return "kernel engine (--engine=kernel): yes: loopback connects and sends pass in the kernel, at its own cost, and every other destination is held there for nettrap"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
