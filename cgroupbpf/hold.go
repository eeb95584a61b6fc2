package cgroupbpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// The hold: a cgroup sock_addr program cannot sleep, but it can refuse
// the call with -ERESTARTNOINTR (bpf_set_retval, 5.18) and raise a
// signal on the calling thread (bpf_send_signal_thread, allowed in cgroup
// programs after 6.12). On its way out the thread takes the signal and
// the kernel restarts the call, which meets the program again, with the
// address copied again from the caller and the socket looked up again.
// Until user space writes a verdict the call loops there; the program
// then applies the verdict to the very destination and socket it was
// given for, on the kernel's own copy: a destination or descriptor
// changed between tries is a new call, held again and reported again.
//
// The signal must be one the thread takes: a signal whose action is to
// be ignored is discarded when sent (SIGURG's default), and a blocked
// one is not taken, and the call would then fail with errno 513
// (ERESTARTNOINTR leaks out). Go's runtime handles SIGURG, its own
// preemption signal, and ignores a stray one; any other program gets
// SIGSTOP, and user space continues it once the verdict is written.

// Sizes of the verdicts map's value and of an event (both little-endian,
// laid out as the program writes them).
const (
	heldValueLen = 176                           // u32 verdict, u32 port, u64 socket cookie, u64 held since (ns), ip[16], u32 errno, u32 new port, new ip[16], unix path[108], u32 0
	heldEventLen = 104                           // u64 pid_tgid, u32 port, u32 family, u64 socket cookie, ip[16], u64 pc, sp, fp, lr, u64 netns cookie, u32 type, protocol, signal, syscall nr, source port, source ip4
	unixEventLen = heldEventLen + sunPathLen + 4 // then a unix call's path[108], u32 address length
	sunPathLen   = 108                           // struct sockaddr_un's sun_path
	valuePath    = 64                            // where the verdicts' value keeps a unix path
	// An inet connect's verdict may name the source its socket is bound
	// to (a redirect's): u32 port (network order), ip[16], where a unix
	// call's path would be.
	valueBindPort, valueBindIP = 64, 68
	erestartNoIntr             = 513 // include/linux/errno.h: restart whatever SA_RESTART says
)

// Verdicts user space writes (heldPending until then).
const (
	heldPending uint32 = iota
	heldAllow
	heldDeny
	heldRedirect
)

// Verdict is user space's answer to a held call: let it through, refuse
// it with an errno, or let it through to another destination (nettrap's
// deny-and-redirect, the DNS sinkhole's).
type Verdict struct {
	kind     uint32
	errno    unix.Errno
	redirect netip.AddrPort
	bind     netip.AddrPort
}

// Allow lets the call through.
func Allow() Verdict { return Verdict{kind: heldAllow} }

// Deny refuses the call with errno.
func Deny(errno unix.Errno) Verdict { return Verdict{kind: heldDeny, errno: errno} }

// RedirectTo lets the call through to to instead, an address of the
// call's family.
func RedirectTo(to netip.AddrPort) Verdict { return Verdict{kind: heldRedirect, redirect: to} }

// RedirectFrom is RedirectTo for a connect whose socket has no source
// yet: it is bound to from first (an address of the call's family; an
// IPv6 socket's may be v4-mapped), so that the destination knows where
// it comes from. Where from is taken, the call is refused.
func RedirectFrom(to, from netip.AddrPort) Verdict {
	return Verdict{kind: heldRedirect, redirect: to, bind: from}
}

// Held is one held call, as the events report it.
type Held struct {
	TID, PID int
	Dest     netip.AddrPort
	Cookie   uint64 // the socket's (bpf_get_socket_cookie)
	// Netns is the cookie of the socket's network namespace.
	Netns uint64
	// Type and Protocol are the socket's (SOCK_DGRAM, IPPROTO_UDP).
	Type, Protocol int
	// PC, SP, FP and LR are the caller's user registers in its call
	// (bpf_task_pt_regs): where nettrap's unwinder starts, on a stack
	// that cannot change while the call is held. LR is arm64's.
	PC, SP, FP, LR uint64
	// Stopped: the hold stopped the caller's process (SIGSTOP), which
	// Serve continues once the verdict is written.
	Stopped bool
	// Nr is the system call the caller is in (sendto, sendmsg, sendmmsg,
	// connect), from its registers.
	Nr int
	// Source is the socket's local address as bound when the call was
	// held (a UDP send's socket is bound before the program runs); its
	// address is unspecified where the socket is bound to none, and it
	// is the IPv4 one only (an IPv6 socket's port only).
	Source netip.AddrPort
	// Unix marks a unix socket's call (UnixProgram): Dest is not set,
	// SunPath is the address's sun_path as long as its length says (an
	// abstract name starts with a NUL; a path may end in one).
	Unix    bool
	SunPath string
	key     uint64
}

// Signal is how the program takes a held thread out of its call.
type Signal int

const (
	// SignalByHandler raises SIGURG where the thread takes it (a handler,
	// not blocked: a Go program) and SIGSTOP elsewhere, reading the
	// caller's signal state through the kernel's BTF.
	SignalByHandler Signal = iota
	// SignalURG always raises SIGURG: for Go programs only.
	SignalURG
	// SignalStop always raises SIGSTOP.
	SignalStop
)

// HoldConfig says what a hold program passes and how it holds the rest.
type HoldConfig struct {
	// Deadline: a call held longer with no verdict fails with EPERM. The
	// hold fails closed, and never hangs its caller, when no one answers.
	Deadline time.Duration
	Signal   Signal
	// Unspecified passes 0.0.0.0 and :: with loopback; DNS holds port 53
	// on loopback too (LoopbackChecks).
	Unspecified, DNS bool
	// PassTGID, when not 0, passes every call of that process: the
	// supervisor's own, made on a socket it took from the tree.
	PassTGID int
	// UnixNames are the last path components a unix program holds
	// (UnixNames of the resolver sockets); it passes every other.
	UnixNames []string
}

// Hold is the maps and the programs of the hold.
type Hold struct {
	cfg              HoldConfig
	verdicts, events *ebpf.Map
	sig              sigState // SignalByHandler's offsets
	unix             *unixCtx // the unix programs', read at the first
}

// NewHold makes the hold's maps.
func NewHold(cfg HoldConfig) (*Hold, error) {
	h := &Hold{cfg: cfg}
	if cfg.Signal == SignalByHandler {
		s, err := readSigState()
		if err != nil {
			return nil, err
		}
		h.sig = s
	}
	v, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nettrap_verdict", Type: ebpf.Hash,
		KeySize: 8, ValueSize: heldValueLen, MaxEntries: 1 << 14})
	if err != nil {
		return nil, fmt.Errorf("make the verdicts' map: %w", err)
	}
	e, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nettrap_held", Type: ebpf.RingBuf, MaxEntries: 1 << 18})
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("make the events' ring buffer: %w", err)
	}
	h.verdicts, h.events = v, e
	return h, nil
}

// Close releases the maps (programs loaded from them keep their own
// references).
func (h *Hold) Close() {
	h.verdicts.Close()
	h.events.Close()
}

// Reader reads the hold's events.
func (h *Hold) Reader() (*ringbuf.Reader, error) {
	rd, err := ringbuf.NewReader(h.events)
	if err != nil {
		return nil, fmt.Errorf("read the hold's events: %w", err)
	}
	return rd, nil
}

// Decide writes verdict for c: applied at c's next try if it still names
// the same destination on the same socket. A stopped caller is continued.
func (h *Hold) Decide(c Held, verdict Verdict) error {
	v := make([]byte, heldValueLen)
	binary.LittleEndian.PutUint32(v[0:], verdict.kind)
	binary.BigEndian.PutUint16(v[4:], c.Dest.Port())
	binary.LittleEndian.PutUint64(v[8:], c.Cookie)
	if c.Unix {
		copy(v[valuePath:valuePath+sunPathLen], c.SunPath)
	} else {
		copy(v[24:40], heldIP(c.Dest.Addr()))
	}
	binary.LittleEndian.PutUint32(v[40:], uint32(verdict.errno))
	if verdict.kind == heldRedirect {
		binary.BigEndian.PutUint16(v[44:], verdict.redirect.Port())
		copy(v[48:64], heldIP(verdict.redirect.Addr()))
	}
	if verdict.kind == heldRedirect && verdict.bind.IsValid() {
		binary.BigEndian.PutUint16(v[valueBindPort:], verdict.bind.Port())
		copy(v[valueBindIP:valueBindIP+16], heldIP(verdict.bind.Addr()))
	}
	// UpdateExist: the entry is the program's, made when the call was
	// held; one that is gone was given up (the deadline passed).
	if err := h.verdicts.Update(c.key, v, ebpf.UpdateExist); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("write the verdict: %w", err)
	}
	if c.Stopped {
		return continueStopped(c.PID)
	}
	return nil
}

// heldIP is an address as the program keeps it: an IPv6 address's 16
// bytes, an IPv4 address's 4 followed by zeros.
func heldIP(a netip.Addr) []byte {
	ip := make([]byte, 16)
	if a.Is4() {
		b := a.As4()
		copy(ip, b[:])
	} else {
		b := a.As16()
		copy(ip, b[:])
	}
	return ip
}

// Serve reads h's events from rd and writes decide's verdict for each
// (none where answer is false), until rd is closed, or until stop is
// set and rd has nothing more to read (Next).
func (h *Hold) Serve(rd *ringbuf.Reader, stop *atomic.Bool, decide func(Held) (v Verdict, answer bool)) error {
	for {
		rec, err := Next(rd, stop)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		c, err := ParseHeld(rec.RawSample)
		if err != nil {
			return err
		}
		v, answer := decide(c)
		if !answer {
			continue
		}
		if err := h.Decide(c, v); err != nil {
			return err
		}
	}
}

// pollPeriod is how often a reader waiting on an empty ring looks
// whether it is to stop.
const pollPeriod = 50 * time.Millisecond

// Next reads the next record of rd. It returns io.EOF once rd is closed,
// or once stop is set and rd is empty: a reader told to stop still reads
// what was reported before (a close would lose it).
func Next(rd *ringbuf.Reader, stop *atomic.Bool) (ringbuf.Record, error) {
	for {
		rd.SetDeadline(time.Now().Add(pollPeriod))
		rec, err := rd.Read()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if stop != nil && stop.Load() {
				return rec, io.EOF
			}
			continue
		case errors.Is(err, ringbuf.ErrClosed), errors.Is(err, os.ErrClosed):
			return rec, io.EOF
		}
		return rec, err
	}
}

// continueStopped sends SIGCONT to pid once it has stopped: a SIGCONT
// that came first would cancel the pending SIGSTOP, and with it the
// restart of the held call.
func continueStopped(pid int) error {
	for i := 0; i < 1000 && !procfs.Stopped(pid); i++ {
		time.Sleep(50 * time.Microsecond)
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil && err != unix.ESRCH {
		return os.NewSyscallError("kill(SIGCONT)", err)
	}
	return nil
}

// ParseHeld reads one event.
func ParseHeld(b []byte) (Held, error) {
	if len(b) < heldEventLen {
		return Held{}, fmt.Errorf("short event (%d bytes)", len(b))
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	key := u64(0)
	h := Held{TID: int(uint32(key)), PID: int(key >> 32),
		Cookie: u64(16), PC: u64(40), SP: u64(48), FP: u64(56), LR: u64(64), Netns: u64(72),
		Type: int(u32(80)), Protocol: int(u32(84)), Stopped: u32(88) == uint32(unix.SIGSTOP), Nr: int(int32(u32(92))),
		key: key}
	port := binary.BigEndian.Uint16(b[8:10])
	switch u32(12) {
	case unix.AF_UNIX:
		if len(b) < unixEventLen {
			return Held{}, fmt.Errorf("short unix event (%d bytes)", len(b))
		}
		n := min(max(int(u32(heldEventLen+sunPathLen))-2, 0), sunPathLen)
		h.Unix, h.SunPath = true, string(b[heldEventLen:heldEventLen+n])
		return h, nil
	case 4:
		h.Dest = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[24:28])), port)
	default:
		h.Dest = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[24:40])), port)
	}
	h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[100:104])), uint16(u32(96)))
	return h, nil
}
