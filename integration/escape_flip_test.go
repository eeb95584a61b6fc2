package integration

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// flipTries is how many times optflip sets its option per run: unguarded,
// about half of them pin to the veth; against a supervisor that lets the
// kernel read the value again, a few hundred tries were enough.
const flipTries = 3000

var flipCounts = regexp.MustCompile(`^ok=(\d+) refused=(\d+)\n?$`)

// flipOut parses optflip's "ok=N refused=M".
func flipOut(t *testing.T, r labRun) (ok, refused int) {
	t.Helper()
	m := flipCounts.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("optflip printed %q (exit %d)\nstderr: %s", r.stdout, r.code, r.stderr)
	}
	ok, _ = strconv.Atoi(m[1])
	refused, _ = strconv.Atoi(m[2])
	return ok, refused
}

// TestEscapeValueFlip: a second thread flips a checked option value from
// lo to the lab's real interface between nettrap's read and the kernel's
// (IP_UNICAST_IF, IPV6_UNICAST_IF, SO_BINDTODEVICE, a multicast join by
// index). Unguarded, sends "to loopback" leave through the veth and the
// join is reported there; under nettrap, in the default mode and under
// --sealed, as root and as nobody, nothing arrives: the option is set by
// nettrap with the bytes it checked. The lo values still pass (some
// setsockopts succeed) and the veth values are denied (some fail).
func TestEscapeValueFlip(t *testing.T) {
	lab.OuterDenies(t, "setsockopts that pin to an interface other than lo or join a group off lo")
	e := newLabEnv(t)
	idx := strconv.Itoa(e.InsideIndex)
	cases := []struct {
		op, dst string
		join    bool
	}{
		{"unicast-if4", "127.0.0.2", false},
		{"unicast-if6", "::1", false},
		{"bindtodevice", "127.0.0.2", false},
		{"join4", "239.78.0.1", true},
	}
	modes := []struct {
		name  string
		flags []string
	}{{"default", nil}, {"sealed", []string{"--sealed"}}}
	for ci, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
				step, ui := 0, 0
				if u == harness.AsNobody {
					ui = 8
				}
				// run runs optflip once and returns what marks its leak:
				// its datagrams' marker, or its own join group's report.
				run := func(flags []string, guarded bool, what string) (labRun, func(lab.Record) bool) {
					step++
					marker := fmt.Sprintf("flipped-%s-%s-%s", c.op, u, what)
					dst, leak := c.dst, containing(marker)
					if c.join {
						g := shiftGroup(netip.MustParseAddr(c.dst), 0x100*ci+0x10*step+ui)
						dst, leak = g.String(), reportOf(g)
					}
					argv := []string{e.bins.OptFlip, c.op, idx, lab.InsideLink, dst, "9", marker, strconv.Itoa(lab.Tries(flipTries))}
					if !guarded {
						return e.run(t, u, argv...), leak
					}
					return e.guarded(t, u, flags, argv...), leak
				}
				// The control: unguarded, the flip must win its race and
				// leak (else the guarded runs would prove nothing). On a
				// loaded machine 3000 tries can miss the window: it gets
				// three runs before it fails.
				for try := 1; ; try++ {
					r, leak := run(nil, false, "unguarded")
					flipOut(t, r)
					if try == 3 {
						waitFrame(t, e, "the unguarded flip's leak (3 runs)", leak)
						break
					}
					if _, ok := e.WaitFrame(leak, 5*time.Second); ok {
						break
					}
					t.Logf("unguarded run %d: its leak never arrived; again", try)
				}

				for _, m := range modes {
					r, leak := run(m.flags, true, m.name)
					ok, refused := flipOut(t, r)
					if ok == 0 || refused == 0 {
						t.Errorf("%s: %d set, %d refused: want both (lo passes, the veth is denied)\nstderr: %s", m.name, ok, refused, r.stderr)
					}
					sentinel := fmt.Sprintf("sentinel %s %s %s", c.op, u, m.name)
					if c.join {
						s := joinSentinel(t, e, shiftGroup(netip.MustParseAddr(c.dst), 0x100*ci+0x80+0x10*step+ui))
						for _, f := range e.Frames() {
							if f.Seq <= s.Seq && leak(f) {
								t.Errorf("LEAK under nettrap (%s): %s", m.name, f)
							}
						}
						continue
					}
					sendSentinelFrame(t, e, sentinel)
					noFrameBefore(t, e, leak, containing(sentinel))
				}
			})
		})
	}
}
