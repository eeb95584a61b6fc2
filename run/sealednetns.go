package run

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/sealns"
	"github.com/nettrap/nettrap/supervisor"
)

// sealedNetns is the network namespace of the command's own that
// --sealed runs it in (package sealns), or nil: where the run is not
// sealed and enforcing, where an outer nettrap's namespace holds this
// one's tree already (the Inner kinds start no supervisor), where
// --sealed-netns=off, or where none can be used. The last is said once,
// on notices: unix and loopback peers are then checked per call.
func sealedNetns(o Options, notices io.Writer) *sealns.Netns {
	if !o.Policy.Sealed || o.Policy.Mode != policy.Enforce || !o.SealedNetns {
		return nil
	}
	switch o.Kind {
	case Command, GoTest, TestBinary:
	default:
		return nil
	}
	ns, err := NewSealedNetns(o.Engine, o.Userns)
	if err != nil {
		fmt.Fprintf(notices, "nettrap: --sealed without a network namespace of the command's own (%v): unix and loopback peers are checked per call instead\n", err)
		return nil
	}
	return ns
}

// NewSealedNetns makes the namespace where a run with engine and userns
// can use one: the notify engine hands sockets in (the ptrace engine
// cannot), and the command gets a user namespace of its own. Without
// the latter it would keep CAP_NET_ADMIN over nettrap's own namespace,
// which a socket handed in belongs to, and which nettrap guards only as
// the starting one.
func NewSealedNetns(engine supervisor.EngineMode, userns supervisor.UsernsMode) (*sealns.Netns, error) {
	choice, err := supervisor.ChooseEngine(engine)
	if err != nil {
		return nil, err
	}
	if choice.Engine != supervisor.EngineNotify {
		return nil, fmt.Errorf("the %s engine cannot hand sockets in", choice.Engine)
	}
	switch uc := supervisor.ChooseUserns(userns); uc.Method {
	case supervisor.NsUserns:
	case supervisor.NsUnprivileged:
		return nil, errors.New("nettrap holds no CAP_SYS_ADMIN to make one")
	case supervisor.NsNoSysAdmin:
		return nil, fmt.Errorf("the command can get no user namespace of its own: %w", uc.Err)
	default:
		return nil, errors.New("the command gets no user namespace of its own (--userns=off)")
	}
	return sealns.New()
}

// notices is where the start's notices go: where the summary goes for
// a run with a hub or a test binary run directly, else stderr.
func (c *confined) notices() io.Writer {
	if c.hub != nil && c.hub.out != nil {
		return c.hub.out.w
	}
	if c.own != nil {
		return c.own.out.w
	}
	return os.Stderr
}
