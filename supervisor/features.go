package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// listenerInstall is how the notify engine installs its filter: with
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where the kernel takes it,
// unless noKillableRecvEnv withholds it.
func listenerInstall() func([]unix.SockFilter) (int, bool, error) {
	if os.Getenv(noKillableRecvEnv) != "" {
		return bpf.InstallWithoutKillableRecv
	}
	return bpf.Install
}

// setSyncWakeUp asks for SYNC_WAKE_UP on listener fd, unless
// noSyncWakeUpEnv withholds it, and tells whether the kernel took it.
func setSyncWakeUp(fd int) bool {
	return os.Getenv(noSyncWakeUpEnv) == "" && unotify.SetSyncWakeUp(fd)
}

// KernelFeature is one kernel feature nettrap uses where the kernel has
// it and works around where not, as `nettrap version` says it, so that a
// report says what the kernel gave.
type KernelFeature struct {
	Name string // as nettrap's docs and notices call it: "SYNC_WAKE_UP"
	What string // the kernel's name and first release
	// Present: the kernel gave it (and no test switch withheld it);
	// Detail says more (Landlock's ABI) or why it is absent.
	Present bool
	Detail  string
	// Without is what nettrap does where it is absent.
	Without string
}

func (f KernelFeature) String() string {
	s := fmt.Sprintf("%s (%s): ", f.Name, f.What)
	if f.Present {
		s += "yes"
		if f.Detail != "" {
			s += ", " + f.Detail
		}
		return s
	}
	s += "no"
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s + ": " + f.Without
}

// KernelFeatures probes the features nettrap uses or works around, the
// way a run meets them: the notify engine's install and ioctls on a
// listener of a throwaway thread (the test switches that imitate older
// kernels withhold theirs here too), the emulator's pidfd_open, and the
// Landlock ABI the tree's domain is chosen by.
func KernelFeatures() []KernelFeature {
	l := probeListener()
	killable := KernelFeature{Name: "WAIT_KILLABLE_RECV", What: "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, 5.19+",
		Without: "a signal can take a caller out of a call nettrap already made for it, and the kernel restarts the call: nettrap answers the restart with the lost answer instead of making the call again"}
	sync := KernelFeature{Name: "SYNC_WAKE_UP", What: "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 6.6+",
		Without: "the notify engine's receivers are woken on any CPU, and each trapped call costs more"}
	send := KernelFeature{Name: "ADDFD with SEND", What: "SECCOMP_ADDFD_FLAG_SEND, 5.14+",
		Without: "under the notify engine, netlink sockets are made by the process itself, so changes to the namespace nettrap started in are not refused (said once in a run), and an allowed pidfd_getfd is continued in the kernel (denied under --sealed)"}
	switch {
	case l.err != nil:
		// No listener here (one above, as on WSL2, or none at all): the
		// ptrace engine uses none of the three; the flag is asked of
		// the kernel alone.
		why := "no listener can be installed here: " + unwrapSyscall(l.err) + "; the ptrace engine does not use it"
		killable.Present = bpf.Detect().WaitKillableRecv && os.Getenv(noKillableRecvEnv) == ""
		if !killable.Present {
			killable.Detail = withheld(noKillableRecvEnv, "")
		}
		sync.Detail, send.Detail = withheld(noSyncWakeUpEnv, why), why
	default:
		killable.Present, sync.Present, send.Present = l.killable, l.syncWakeUp, l.addfdSend
		killable.Detail = withheld(noKillableRecvEnv, "")
		sync.Detail = withheld(noSyncWakeUpEnv, "")
	}
	if killable.Present {
		killable.Detail = ""
	}
	if sync.Present {
		sync.Detail = ""
	}
	if send.Present {
		send.Detail = ""
	}
	thread := KernelFeature{Name: "PIDFD_THREAD", What: "pidfd_open of a thread, 6.9+",
		Without: "nettrap's pidfds name the caller's process, not its thread: its descriptors are looked up in the thread group leader's table, and a SIGPIPE nettrap raises goes to the process"}
	var err error
	if thread.Present, err = pidfdThread(); err != nil {
		thread.Detail = err.Error()
	}
	ll := KernelFeature{Name: "LANDLOCK", What: "Landlock ABI, 5.13+; 6 (6.12+) scopes signals",
		Without: "the confined tree gets no Landlock domain (see tree domain)"}
	switch abi, err := landlock.Probe(); {
	case os.Getenv(landlock.NoLandlockEnv) != "":
		ll.Detail = withheld(landlock.NoLandlockEnv, "")
	case err != nil:
		ll.Detail = err.Error()
	default:
		ll.Present, ll.Detail = true, fmt.Sprintf("ABI %d", abi)
	}
	return []KernelFeature{killable, sync, send, thread, ll}
}

// withheld says that env withholds a feature, where it is set; else why.
func withheld(env, why string) string {
	if os.Getenv(env) != "" {
		return "withheld by " + env
	}
	return why
}

// listenerFeatures is what a listener of a throwaway thread showed.
type listenerFeatures struct {
	killable, syncWakeUp, addfdSend bool
	err                             error
}

// probeListener installs a filter that allows everything with a
// listener, as the notify engine installs its own, on a thread that then
// exits, and asks its listener what the engine asks of its own.
func probeListener() listenerFeatures {
	ch := make(chan listenerFeatures, 1)
	go func() {
		// No UnlockOSThread: the thread carries the filter and must exit.
		runtime.LockOSThread()
		allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		fd, killable, err := listenerInstall()(allow)
		if err != nil {
			ch <- listenerFeatures{err: err}
			return
		}
		defer unix.Close(fd)
		ch <- listenerFeatures{killable: killable, syncWakeUp: setSyncWakeUp(fd), addfdSend: unotify.AddfdSendKnown(fd)}
	}()
	return <-ch
}

// pidfdThread asks decode.PidfdThread on a thread of its own (Gettid's
// thread must stay for the call).
func pidfdThread() (bool, error) {
	type result struct {
		ok  bool
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ok, err := decode.PidfdThread()
		ch <- result{ok, err}
	}()
	r := <-ch
	if errors.Is(r.err, unix.EINVAL) {
		r.err = nil // the kernel before 6.9: absent, nothing more to say
	}
	return r.ok, r.err
}
