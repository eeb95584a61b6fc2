package landlock

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Kind is what a domain handles.
type Kind int

const (
	// None: no domain (Landlock unavailable, or it would cost this mode
	// what it must keep).
	None Kind = iota
	// Signals: ABI 6+, signals scoped and nothing else handled.
	Signals
	// Filesystem: ABI 2 to 5, REFER and MAKE_BLOCK handled and given
	// back on /; the kernel then refuses the tree mounts.
	Filesystem
)

func (k Kind) String() string {
	switch k {
	case Signals:
		return "signals"
	case Filesystem:
		return "filesystem"
	}
	return "none"
}

// Plan is the domain a run puts its command in.
type Plan struct {
	Kind Kind
	// ABI is the kernel's Landlock ABI, 0 where it has none.
	ABI int
	// Why says why there is no domain (Kind None), for notices.
	Why string
}

// NoLandlockEnv, set to anything in nettrap's environment, withholds
// Landlock: a test-only switch, for the lab's controls and for what a
// kernel without it allows.
const NoLandlockEnv = "NETTRAP_TEST_NO_LANDLOCK"

// minScopedABI is the first ABI that scopes signals (Linux 6.12).
const minScopedABI = 6

// Choose is the plan for a run on this kernel: sealed is --sealed.
func Choose(sealed bool) Plan {
	if os.Getenv(NoLandlockEnv) != "" {
		return Plan{Why: "withheld by " + NoLandlockEnv}
	}
	abi, err := Probe()
	return choose(abi, err, sealed)
}

// choose is Choose for a kernel whose probe returned abi and err.
func choose(abi int, err error, sealed bool) Plan {
	switch {
	case err != nil:
		return Plan{Why: err.Error()}
	case abi >= minScopedABI:
		return Plan{Kind: Signals, ABI: abi}
	case abi == 1:
		return Plan{ABI: abi, Why: "Landlock ABI 1 (Linux 5.13 to 5.18) refuses renames across directories to every domain"}
	case sealed:
		return Plan{Kind: Filesystem, ABI: abi}
	}
	return Plan{ABI: abi, Why: fmt.Sprintf("Landlock ABI %d scopes no signals, and a domain there costs the tree its mounts (used under --sealed only)", abi)}
}

// Probe returns the kernel's Landlock ABI, or why there is none.
var Probe = sync.OnceValues(probe)

func probe() (int, error) {
	abi, err := abiVersion()
	switch {
	case errors.Is(err, unix.ENOSYS):
		return 0, errors.New("the kernel has no Landlock (before Linux 5.13, or built without it)")
	case errors.Is(err, unix.EOPNOTSUPP):
		return 0, errors.New("Landlock is off in this kernel (not in its lsm= list)")
	case err != nil:
		return 0, fmt.Errorf("Landlock cannot be used here: %w", err)
	}
	return abi, nil
}

// Restrict puts the calling thread in a new domain of p, nested below
// the one it is in; with Kind None it does nothing. Only this thread is
// restricted: the caller holds it locked, forks the command from it and
// never hands it back to the scheduler. It sets no_new_privs on the
// thread, as the seccomp filter nettrap installs there does anyway.
func (p Plan) Restrict() error {
	var attr unix.LandlockRulesetAttr
	var size uintptr
	switch p.Kind {
	case None:
		return nil
	case Signals:
		attr.Scoped, size = unix.LANDLOCK_SCOPE_SIGNAL, 24
	case Filesystem:
		attr.Handled_access_fs, size = fsRights, 8
	default:
		return fmt.Errorf("landlock: unknown domain kind %d", p.Kind)
	}
	fd, err := createRuleset(&attr, size)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	defer unix.Close(fd)
	if p.Kind == Filesystem {
		if err := giveBackOnRoot(fd); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("landlock: %w", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err))
	}
	if err := restrictSelf(fd); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// fsRights are what a Filesystem domain handles: REFER, which every
// domain of ABI 2 to 5 refuses unless a rule grants it (renames and links
// across directories), so it must be handled to be given back; and
// MAKE_BLOCK, which the tree could only use with CAP_MKNOD.
const fsRights = unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK

// giveBackOnRoot grants fsRights beneath /, so that the domain changes
// no file access: a mount namespace the tree makes copies this one, with
// the same root.
func giveBackOnRoot(ruleset int) error {
	root, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("open /", err)
	}
	defer unix.Close(root)
	return addPathRule(ruleset, root, fsRights)
}

// String says what p is, for `nettrap version` and notices.
func (p Plan) String() string {
	switch p.Kind {
	case Signals:
		return fmt.Sprintf("Landlock ABI %d: a domain of the tree's own, signals scoped", p.ABI)
	case Filesystem:
		return fmt.Sprintf("Landlock ABI %d: a domain of the tree's own, without mounts (signals not scoped before ABI 6)", p.ABI)
	}
	return "no Landlock domain: " + p.Why
}

// Arg and ParseArg carry a plan in a re-exec'd helper's arguments (the
// ptrace engine's stub).
func (p Plan) Arg() string { return fmt.Sprintf("landlock=%d:%d", p.Kind, p.ABI) }

// ParseArg is the plan Arg wrote.
func ParseArg(s string) (Plan, error) {
	var p Plan
	if _, err := fmt.Sscanf(s, "landlock=%d:%d", &p.Kind, &p.ABI); err != nil || p.Kind < None || p.Kind > Filesystem {
		return Plan{}, fmt.Errorf("landlock: bad plan argument %q", s)
	}
	return p, nil
}
