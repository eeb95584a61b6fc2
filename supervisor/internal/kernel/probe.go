package kernel

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/classify"
)

// ErrUnavailable wraps every reason the kernel engine cannot work here.
var ErrUnavailable = errors.New("the kernel engine is unavailable")

// Probe tells whether the engine can work here: a cgroup v2 this process
// may make a cgroup in, and the kernel loads and attaches the programs
// (root in the initial user namespace: CAP_BPF, CAP_NET_ADMIN; a kernel
// whose cgroup programs may raise a signal, after 6.12, with the unix
// hooks of 6.7 and the kernel's BTF). It makes and
// removes one cgroup.
func Probe() error {
	dir, remove, err := cgroupbpf.MakeCgroup(probePrefix)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer remove()
	cg, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer cg.Close()
	h, err := cgroupbpf.NewHold(cgroupbpf.HoldConfig{Deadline: Deadline, Signal: cgroupbpf.SignalByHandler, DNS: true, PassTGID: os.Getpid(),
		UnixNames: cgroupbpf.UnixNames(classify.DefaultResolverSockets())})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer h.Close()
	for _, at := range slices.Concat(hooks, unixHooks) {
		load := h.Program
		if slices.Contains(unixHooks, at) {
			load = h.UnixProgram
		}
		p, err := load(at)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrUnavailable, verifierReason(err))
		}
		err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: int(cg.Fd()), Program: p, Attach: at, Flags: unix.BPF_F_ALLOW_MULTI})
		p.Close()
		if err != nil {
			return fmt.Errorf("%w: attach a cgroup program: %w", ErrUnavailable, err)
		}
	}
	return nil
}

// verifierReason shortens a refused program's error to the verifier's
// last words about the helper it refused, where that is the reason.
func verifierReason(err error) string {
	s := err.Error()
	if strings.Contains(s, "bpf_send_signal_thread") || strings.Contains(s, "unknown func") {
		return "the kernel's cgroup programs cannot hold a call (bpf_send_signal_thread, allowed there after 6.12): " + s
	}
	return s
}
