package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/cgroupbpf"
)

// exitCantRun is the status when kfloor cannot confine here, as nettrap's.
const exitCantRun = 125

// stubArg makes kfloor the filter's stub: install the filter, exec the
// command (the -f case, inside the cgroup).
const stubArg = "-kfloor-stub"

func main() { os.Exit(dispatch(os.Args[1:])) }

// dispatch is kfloor, or its stub when args start with stubArg.
func dispatch(args []string) int {
	if len(args) > 0 && args[0] == stubArg {
		err := stub(args[1:])
		fmt.Fprintln(os.Stderr, "kfloor:", err)
		return exitCantRun
	}
	return run(args)
}

func run(args []string) int {
	fs := flag.NewFlagSet("kfloor", flag.ContinueOnError)
	filter := fs.Bool("f", false, "run the command under nettrap's seccomp program, every trap an allow")
	counts := fs.Bool("counts", false, "print the programs' counts on stderr at the end")
	egress := fs.Bool("e", false, "add the kernel engine's egress backstop: drop every packet not through lo, or with IP options or IPv6 extension headers")
	hold := fs.Bool("hold", false, "hold every other destination for kfloor, which refuses it (the hold's programs, their fast path timed)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "kfloor: usage: kfloor [-f] [-e] [-hold] [-counts] -- COMMAND [ARG...]")
		return 2
	}
	f, err := confine(*egress, *hold)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfloor: cannot confine:", err)
		return exitCantRun
	}
	defer f.close()
	code, err := f.runIn(fs.Args(), *filter)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfloor:", err)
		return exitCantRun
	}
	if *counts && *hold {
		fmt.Fprintf(os.Stderr, "kfloor: held %d\n", f.held.Load())
	} else if *counts {
		allowed, denied, err := f.counted()
		if err != nil {
			fmt.Fprintln(os.Stderr, "kfloor:", err)
			return exitCantRun
		}
		fmt.Fprintf(os.Stderr, "kfloor: allowed %d denied %d\n", allowed, denied)
	}
	return code
}

// floor is a cgroup with the programs attached.
type floor struct {
	dir    string
	counts *ebpf.Map
	held   atomic.Int64 // calls held and refused (-hold)
	closes []func() error
}

func confine(egress, hold bool) (*floor, error) {
	dir, remove, err := cgroupbpf.MakeCgroup("kfloor")
	if err != nil {
		return nil, err
	}
	f := &floor{dir: dir, closes: []func() error{func() error { remove(); return nil }}}
	if f.counts, err = newCounts(); err != nil {
		f.close()
		return nil, err
	}
	f.closes = append(f.closes, f.counts.Close)
	var h *cgroupbpf.Hold
	if hold {
		if h, err = f.startHold(); err != nil {
			f.close()
			return nil, err
		}
	}
	for _, hk := range hooks {
		var p *ebpf.Program
		if h != nil {
			p, err = h.Program(hk.attach)
		} else {
			p, err = program(hk, f.counts)
		}
		if err != nil {
			f.close()
			return nil, err
		}
		f.closes = append(f.closes, p.Close)
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: hk.attach, Program: p})
		if err != nil {
			f.close()
			return nil, fmt.Errorf("attach the %s program: %w", hk.attach, err)
		}
		f.closes = append(f.closes, l.Close)
	}
	if egress {
		if err := f.attachEgress(); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// holdDeadline is how long -hold's programs hold a call kfloor has not
// answered.
const holdDeadline = 10 * time.Second

// kfloorHold is the hold's configuration for kfloor: the floor's
// checks (loopback and unspecified pass), raising sig, failing closed
// after deadline.
func kfloorHold(sig cgroupbpf.Signal, deadline time.Duration) cgroupbpf.HoldConfig {
	return cgroupbpf.HoldConfig{Deadline: deadline, Signal: sig, Unspecified: true}
}

// startHold makes the hold's maps and serves its events: every held call
// is refused (kfloor passes loopback only, as the floor does).
func (f *floor) startHold() (*cgroupbpf.Hold, error) {
	h, err := cgroupbpf.NewHold(kfloorHold(cgroupbpf.SignalURG, holdDeadline))
	if err != nil {
		return nil, err
	}
	f.closes = append(f.closes, func() error { h.Close(); return nil })
	rd, err := h.Reader()
	if err != nil {
		return nil, err
	}
	served := make(chan error, 1)
	go func() {
		served <- h.Serve(rd, nil, func(cgroupbpf.Held) (cgroupbpf.Verdict, bool) {
			f.held.Add(1)
			return cgroupbpf.Deny(unix.EPERM), true
		})
	}()
	f.closes = append(f.closes, func() error { rd.Close(); return <-served })
	return h, nil
}

func (f *floor) attachEgress() error {
	ns, err := cgroupbpf.NetnsCookie()
	if err != nil {
		return err
	}
	b, err := cgroupbpf.NewBackstop(ns)
	if err != nil {
		return err
	}
	f.closes = append(f.closes, func() error { b.Close(); return nil })
	p, err := b.Program()
	if err != nil {
		return err
	}
	f.closes = append(f.closes, p.Close)
	l, err := link.AttachCgroup(link.CgroupOptions{Path: f.dir, Attach: ebpf.AttachCGroupInetEgress, Program: p})
	if err != nil {
		return fmt.Errorf("attach the egress program: %w", err)
	}
	f.closes = append(f.closes, l.Close)
	return nil
}

// close detaches and frees in the reverse order of confine.
func (f *floor) close() {
	for i := len(f.closes) - 1; i >= 0; i-- {
		f.closes[i]()
	}
}

// runIn starts argv in the cgroup (clone3's CLONE_INTO_CGROUP: it is in
// there from its first instruction) and returns its exit status.
func (f *floor) runIn(argv []string, filter bool) (int, error) {
	cg, err := os.Open(f.dir)
	if err != nil {
		return 0, err
	}
	defer cg.Close()
	if filter {
		argv = append([]string{"/proc/self/exe", stubArg}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return 0, nil
}

// counted sums the per-CPU counts.
func (f *floor) counted() (allowed, denied uint64, err error) {
	sum := func(key uint32) (uint64, error) {
		var per []uint64
		if err := f.counts.Lookup(key, &per); err != nil {
			return 0, fmt.Errorf("read the counts: %w", err)
		}
		var n uint64
		for _, v := range per {
			n += v
		}
		return n, nil
	}
	if allowed, err = sum(allowedKey); err != nil {
		return 0, 0, err
	}
	denied, err = sum(deniedKey)
	return allowed, denied, err
}

// stub installs nettrap's seccomp program with every SECCOMP_RET_USER_NOTIF
// an allow, then execs argv: the command pays the filter's dispatch on
// every call, as it would if the kernel decided the calls nettrap traps.
// It returns only on failure.
func stub(argv []string) error {
	prog, err := bpf.AssembleWith(runtime.GOARCH, bpf.Options{})
	if err != nil {
		return err
	}
	for i := range prog {
		if prog[i].Code == unix.BPF_RET|unix.BPF_K && prog[i].K == unix.SECCOMP_RET_USER_NOTIF {
			prog[i].K = unix.SECCOMP_RET_ALLOW
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	// bpf.InstallTrace installs a program without a listener on this
	// thread alone: the exec that follows must be made from it, and the
	// command inherits the filter from it.
	runtime.LockOSThread()
	if err := bpf.InstallTrace(prog); err != nil {
		return err
	}
	return unix.Exec(path, argv, os.Environ())
}
