package bpf

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/internal/compat32"
)

// ListenerProbe is what ProbeHidden saw of the seccomp filters above
// nettrap when one of them holds a listener (ErrListenerAbove). A
// listener's USER_NOTIF outranks the ptrace engine's TRACE, so a call
// such a filter traps never stops for the tracer: the listener decides
// it, and may let it run.
type ListenerProbe struct {
	// Hidden is the first call nettrap traps that the filters above took
	// from the probe ("connect", "i386 sendto", "x32 sendmsg"; "" for
	// none): the probe stops there, one being enough to need the entry
	// stops.
	Hidden string
	// Unprobed are the ABIs this process can run but cannot make calls
	// of itself ("arm" on an arm64 machine that runs 32-bit programs):
	// unproven, so counted as hidden.
	Unprobed []string
	// Others are calls nettrap does not trap that the filters above
	// took (WSL2's init takes bind and listen): said, never needed.
	Others []string
}

// Sees tells whether the probe saw every call nettrap traps reach the
// TRACE stop: then the ptrace engine needs no syscall-entry stops for the
// filters above (what it proves is in ProbeHidden's comment).
func (p ListenerProbe) Sees() bool { return p.Hidden == "" && len(p.Unprobed) == 0 }

// String says what the probe saw, for `nettrap version` and the
// ptrace engine's notice.
func (p ListenerProbe) String() string {
	s := "it hides none of the calls nettrap traps"
	if p.Hidden != "" {
		s = "it hides " + p.Hidden + ", one of the calls nettrap traps"
	}
	if len(p.Unprobed) > 0 {
		s += fmt.Sprintf("; %s calls cannot be probed from here", strings.Join(p.Unprobed, ", "))
	}
	if len(p.Others) > 0 {
		s += fmt.Sprintf(" (it traps %s)", strings.Join(p.Others, ", "))
	}
	return s
}

// probeCall is one call of the probe: a trapped syscall of one ABI with
// argument registers nettrap's filter traps.
type probeCall struct {
	abi  *abiInfo
	nr   uint32
	kind Kind
	name string // as ListenerProbe says it
	args [6]uintptr
	// other: a call nettrap does not trap (ListenerProbe.Others).
	other bool
}

// ProbeHidden makes, on a throwaway thread under a filter of its own that
// returns SECCOMP_RET_TRACE for each call nettrap traps (and bind and
// listen), one such call per trapped syscall, ABI and shape of arguments.
// This process has no tracer, so a call that reaches that TRACE fails
// with ENOSYS without running; one that a filter above takes with a
// stronger action (its listener's USER_NOTIF) returns something else.
// The arguments make every call fail before it has any effect should it
// run (descriptor -1 or 3 with pointers into the unmapped first page, a
// pid that cannot exist).
//
// What it proves: a classic BPF filter's action is a pure function of
// (arch, nr, instruction pointer, argument registers), with no state and
// no view of memory. For a filter above that reads only arch and nr, as
// WSL2's init's and sysbox's do, one call per syscall and ABI settles
// every call. A filter that reads argument registers or the instruction
// pointer could hide calls whose registers differ from the probe's; no
// finite probe sees that, and nettrap cannot read the filter (the kernel
// lends filters only to a caller under no seccomp filter). Which is why
// --sealed keeps the syscall-entry stops whatever the probe saw.
func ProbeHidden(goarch string) (ListenerProbe, error) {
	t, ok := targets[goarch]
	if !ok || goarch != runtime.GOARCH {
		return ListenerProbe{}, fmt.Errorf("bpf: cannot probe %q calls from %s", goarch, runtime.GOARCH)
	}
	calls := probeCalls(t)
	prog, err := probeFilter(t, calls)
	if err != nil {
		return ListenerProbe{}, err
	}
	type result struct {
		p   ListenerProbe
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread carries the probe's filter and
		// must exit with it.
		p, err := probeOnThread(t, prog, calls)
		done <- result{p, err}
	}()
	r := <-done
	return r.p, r.err
}

// probeOnThread installs prog on this thread and makes calls.
func probeOnThread(t target, prog []unix.SockFilter, calls []probeCall) (ListenerProbe, error) {
	var p ListenerProbe
	runs, callable := compat32.Runs()
	if runs && !callable {
		p.Unprobed = append(p.Unprobed, t.compat.name)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return p, fmt.Errorf("bpf: probe: set no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	if _, errno := seccompSetFilter(0, prog); errno != 0 {
		return p, fmt.Errorf("bpf: probe: install its filter: %w", os.NewSyscallError("seccomp", errno))
	}
	for _, c := range calls {
		if c.abi == t.compat && !callable {
			continue
		}
		seen, err := probeOne(t, c)
		if err != nil {
			return p, err
		}
		switch {
		case seen:
		case c.other:
			p.Others = append(p.Others, c.name)
		default:
			// One hidden call settles the method (entry stops), and
			// the listener above takes each hidden call the probe
			// makes: stop at the first (see probeCalls' order).
			p.Hidden = c.name
			return p, nil
		}
	}
	return p, nil
}

// probeOne makes c and tells whether it met the probe's TRACE.
func probeOne(t target, c probeCall) (bool, error) {
	var r uintptr
	var errno unix.Errno
	if c.abi == t.compat {
		ret, ok := compat32.Syscall(uintptr(c.nr), c.args)
		if !ok {
			return false, fmt.Errorf("bpf: probe: %s call faulted after a first one ran", c.name)
		}
		if ret < 0 && ret > -4096 {
			errno = unix.Errno(-ret)
		} else {
			r = uintptr(ret)
		}
	} else {
		r, _, errno = unix.RawSyscall6(uintptr(c.nr), c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
	}
	if errno == 0 && c.kind == Socket {
		unix.Close(int(r)) // hidden, and it ran: the netlink socket it made
	}
	return errno == unix.ENOSYS, nil
}

// probeFilter returns TRACE for every (arch, nr) of calls, ALLOW for the
// rest (the thread's own runtime calls).
func probeFilter(t target, calls []probeCall) ([]unix.SockFilter, error) {
	a := newAsm()
	trace := a.retTo(retTrace)
	for _, abi := range []*abiInfo{t.native, t.compat} {
		other := a.newLabel()
		a.load(offArch)
		a.jump(bpf.JumpEqual, abi.audit, next, other)
		a.load(offNr)
		for _, c := range calls {
			if c.abi == abi || (abi == t.native && c.abi == t.x32) {
				a.jump(bpf.JumpEqual, c.nr, trace, next)
			}
		}
		a.ret(retAllow)
		a.mark(other)
	}
	a.ret(retAllow)
	a.placeRets()
	insns, err := a.resolve()
	if err != nil {
		return nil, fmt.Errorf("bpf: probe filter: %w", err)
	}
	return encode(insns)
}
