package kernel

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
)

// Deadline is how long a held call waits for a verdict before it fails
// with EPERM: longer than any decision takes (a marked test's decision
// waits for the test's output, a few seconds at most), and the bound
// on a call held when nettrap is gone.
const Deadline = time.Minute

// hooks are where the programs attach: the sends with an address, and
// connect (a TCP Fast Open sendto connects without a connect(2)); the
// unix ones (6.7, before any kernel whose programs can hold a call) see
// a unix socket's, whose path they read from the kernel's copy.
var hooks = []ebpf.AttachType{
	ebpf.AttachCGroupUDP4Sendmsg, ebpf.AttachCGroupUDP6Sendmsg,
	ebpf.AttachCGroupInet4Connect, ebpf.AttachCGroupInet6Connect,
}

var unixHooks = []ebpf.AttachType{ebpf.AttachCgroupUnixConnect, ebpf.AttachCgroupUnixSendmsg}

// The names of the engine's cgroups (and its probe's): PREFIX-PID-N,
// under nettrap's own.
const cgroupPrefix, probePrefix = "nettrap", "nettrap-probe"

// Config is what the engine needs of the supervisor.
type Config struct {
	Decider decision.Decider
	Stats   *answer.Stats
	Errs    *errlog.Log
	// Netns is the namespace the command starts in, nettrap's own (New
	// reads it); with Tree, a call in any other is in one the tree made
	// (the command has a user namespace of its own, and cannot enter
	// any other).
	Netns *namespace.Starting
	Tree  bool
	// ResolverSockets are the unix sockets the decider tells apart
	// (classify.Resolvers.UnixSockets): the unix programs hold the
	// paths that end as one of them does, and pass every other.
	ResolverSockets []string
}

// Engine is the cgroup, its programs and the goroutine that serves them.
type Engine struct {
	cfg      Config
	dir      string
	remove   func()
	cg       *os.File
	hold     *cgroupbpf.Hold
	back     *cgroupbpf.Backstop
	attached []*ebpf.Program
	rd, drop *ringbuf.Reader
	served   chan error
	deciding sync.WaitGroup
	stopping atomic.Bool // Stop was called: the readers end once the rings are empty
	ids      atomic.Uint64
}

// New makes the cgroup and attaches the programs; the command is to be
// started in Dir (CgroupFD, for clone3's CLONE_INTO_CGROUP).
func New(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg}
	if err := e.setUp(); err != nil {
		e.release()
		return nil, err
	}
	return e, nil
}

// setUp is New's work, which release undoes.
func (e *Engine) setUp() error {
	cgroupbpf.RemoveStale(cgroupPrefix)
	cgroupbpf.RemoveStale(probePrefix)
	var err error
	if e.dir, e.remove, err = cgroupbpf.MakeCgroup(cgroupPrefix); err != nil {
		return err
	}
	if e.cg, err = os.Open(e.dir); err != nil {
		return fmt.Errorf("open the command's cgroup: %w", err)
	}
	e.hold, err = cgroupbpf.NewHold(cgroupbpf.HoldConfig{Deadline: Deadline,
		Signal: cgroupbpf.SignalByHandler, DNS: true, PassTGID: os.Getpid(),
		UnixNames: cgroupbpf.UnixNames(e.cfg.ResolverSockets)})
	if err != nil {
		return err
	}
	ns, err := namespace.Read()
	switch {
	case err != nil:
		return fmt.Errorf("the starting network namespace: %w", err)
	case ns.Cookie == 0:
		return errors.New("the starting network namespace has no cookie (SO_NETNS_COOKIE, 5.14)")
	}
	e.cfg.Netns = &ns
	if e.back, err = cgroupbpf.NewBackstop(ns.Cookie); err != nil {
		return err
	}
	for _, at := range hooks {
		if err := e.attach(at, e.hold.Program); err != nil {
			return err
		}
	}
	for _, at := range unixHooks {
		if err := e.attach(at, e.hold.UnixProgram); err != nil {
			return err
		}
	}
	return e.attach(ebpf.AttachCGroupInetEgress, func(ebpf.AttachType) (*ebpf.Program, error) { return e.back.Program() })
}

// attach loads make's program for at and attaches it to the cgroup,
// beside any other (BPF_F_ALLOW_MULTI).
func (e *Engine) attach(at ebpf.AttachType, make func(ebpf.AttachType) (*ebpf.Program, error)) error {
	p, err := make(at)
	if err != nil {
		return err
	}
	err = link.RawAttachProgram(link.RawAttachProgramOptions{Target: int(e.cg.Fd()), Program: p,
		Attach: at, Flags: unix.BPF_F_ALLOW_MULTI})
	if err != nil {
		p.Close()
		return fmt.Errorf("attach the %s program: %w", at, err)
	}
	e.attached = append(e.attached, p)
	return nil
}

// Dir is the command's cgroup.
func (e *Engine) Dir() string { return e.dir }

// CgroupFD is the command's cgroup, open, for SysProcAttr.CgroupFD.
func (e *Engine) CgroupFD() int { return int(e.cg.Fd()) }

// Start serves the held calls and the backstop's reports.
func (e *Engine) Start() error {
	rd, err := e.hold.Reader()
	if err != nil {
		return err
	}
	drop, err := e.back.Reader()
	if err != nil {
		rd.Close()
		return err
	}
	e.rd, e.drop, e.served = rd, drop, make(chan error, 2)
	go func() {
		e.served <- e.hold.Serve(rd, &e.stopping, func(h cgroupbpf.Held) (cgroupbpf.Verdict, bool) {
			e.deciding.Add(1)
			go e.decide(h)
			return cgroupbpf.Verdict{}, false
		})
	}()
	go func() { e.served <- e.serveDrops(drop) }()
	return nil
}

// Stop stops serving, once the command's tree is gone, and takes the
// programs and the cgroup away.
func (e *Engine) Stop() {
	if e.rd != nil {
		// Read what is reported already (a packet dropped just before
		// the command exited), then stop.
		e.stopping.Store(true)
		for range 2 {
			if err := <-e.served; err != nil {
				e.cfg.Errs.Add(fmt.Errorf("kernel engine: %w", err))
			}
		}
		e.deciding.Wait()
		e.rd.Close()
		e.drop.Close()
	}
	e.release()
}

// release removes the cgroup, and with it the programs. They are not
// detached first: a cgroup with a process left (a daemon of the tree
// that outlived it) cannot be removed and keeps its programs, so that
// its calls stay held and fail at the deadline, never unchecked.
func (e *Engine) release() {
	for _, p := range e.attached {
		p.Close() // the attachment holds its own reference
	}
	e.attached = nil
	if e.hold != nil {
		e.hold.Close()
	}
	if e.back != nil {
		e.back.Close()
	}
	if e.cg != nil {
		e.cg.Close()
	}
	if e.remove != nil {
		e.remove()
	}
}
