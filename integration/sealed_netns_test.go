package integration

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// sealedNetnsNotice starts the line nettrap says once where --sealed
// cannot give the command a network namespace of its own.
const sealedNetnsNotice = "nettrap: --sealed without a network namespace of the command's own"

// TestSealedNetns: under --sealed, as root with the notify engine, the
// command runs in a network namespace of its own with only lo; an
// address an --allow rule opens is connected by nettrap and handed in
// (a blocking connect, Go's own dial over TCP and UDP, an unconnected
// UDP send), and arrives;
// without the rule the same call is denied and nothing arrives. Where
// no namespace can be used (nettrap as nobody, the ptrace variants) the
// run says so once, and the per-call checks apply.
func TestSealedNetns(t *testing.T) {
	e := newLabEnv(t)
	tcp := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 0))
	udp := e.ListenUDP(t, netip.AddrPortFrom(lab.Outside4, 0))
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.Unprivileged()}, func(t *testing.T, u harness.User) {
		r := e.guarded(t, u, []string{"--sealed"}, "/bin/cat", "/proc/net/dev")
		off := strings.EqualFold(os.Getenv("NETTRAP_SEALED_NETNS"), "off")
		if got := strings.Contains(r.stderr, sealedNetnsNotice); got != (!inSealedNetns(t, u) && !off) {
			t.Errorf("notice %q said: %v, want %v\nstderr: %s", sealedNetnsNotice, got, !got, r.stderr)
		}
		if !inSealedNetns(t, u) {
			return
		}
		if ifs := interfaces(r.stdout); len(ifs) != 1 || ifs[0] != "lo" {
			t.Errorf("the command sees interfaces %v, want [lo]\n%s", ifs, r.stdout)
		}
		for _, c := range []struct {
			name string
			ln   *lab.Listener
			argv func(marker string) []string
		}{
			{"blocking connect", tcp, func(m string) []string { return []string{"tcp-send", tcp.Addr.String(), m} }},
			{"go dial tcp", tcp, func(m string) []string { return []string{"go-dial", "tcp4", tcp.Addr.String(), m} }},
			{"go dial udp", udp, func(m string) []string { return []string{"go-dial", "udp4", udp.Addr.String(), m} }},
			// An unconnected send: a socket of nettrap's replaces the
			// caller's, and the send is made on it.
			{"unconnected udp send", udp, func(m string) []string { return []string{"udp", udp.Addr.String(), m} }},
		} {
			t.Run(c.name, func(t *testing.T) {
				marker := "handed in " + c.name
				rule := "--allow=" + c.ln.Addr.String()
				r := e.guarded(t, u, []string{"--sealed", rule}, append([]string{e.bins.Escapee}, c.argv(marker)...)...)
				if o := parseEscapee(t, r); !o.OK {
					t.Fatalf("%s under %s: %s (%s)\nstderr: %s", c.name, rule, o.Err, o.Errno, r.stderr)
				}
				waitRecord(t, c.ln, "the handed-in socket's message", containing(marker))
				reason := "allowed: --allow " + lab.Outside4.String() + "/32:" + strconv.Itoa(int(c.ln.Addr.Port()))
				allowed := false
				for _, rec := range r.audit {
					allowed = allowed || (rec.Decision == "allowed" && rec.Reason == reason)
				}
				if !allowed {
					t.Errorf("no allowed record %q: %+v", reason, r.audit)
				}

				marker = "not allowed " + c.name
				mark := lastSeq(t, e, c.ln)
				r = e.guarded(t, u, []string{"--sealed"}, append([]string{e.bins.Escapee}, c.argv(marker)...)...)
				mustBeDenied(t, r, "EPERM", c.ln.Addr.String()+" (external)", "external")
				noRecordAfter(t, e, c.ln, c.ln.Network, mark, marker)
			})
		}
	})
}

// interfaces are the interface names of a /proc/net/dev text.
func interfaces(dev string) []string {
	var out []string
	for line := range strings.Lines(dev) {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}
