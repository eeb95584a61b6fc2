package integration

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// The cases of a network namespace the confined program makes for
// itself reaching back into the starting one (the lab's inside), or of
// entering one it did not make (the lab's outside), as root: each first
// leaks unguarded; under nettrap (default mode and --sealed) the program
// runs in a user namespace of its own, the kernel refuses the step with
// EPERM, and nothing arrives.

// sealedModes are the nettrap flags of the guarded runs.
var sealedModes = []struct {
	name  string
	flags []string
}{{"default", nil}, {"sealed", []string{"--sealed"}}}

// mustFailWith: the escapee's op failed with errno (and nettrap said
// nothing was blocked: the kernel refused, nettrap had nothing to see).
func mustFailWith(t *testing.T, r labRun, errno string) {
	t.Helper()
	if o := parseEscapee(t, r); o.OK || o.Errno != errno {
		t.Errorf("under nettrap: ok=%v errno=%q err=%q, want %s\nstderr: %s", o.OK, o.Errno, o.Err, errno, r.stderr)
	}
}

// noDatagramAfter fails t if any datagram reached ln after record mark
// and before a sentinel datagram the test sends now.
func noDatagramAfter(t *testing.T, e labEnv, ln *lab.Listener, mark int, what string) {
	t.Helper()
	noRecordAfter(t, e, ln, "udp", mark, what)
}

// TestEscapeNetnsVethVxlan: a veth pair whose peer is put in the starting
// namespace gives the program's own namespace an id for it; a VXLAN
// device over that id, remote 203.0.113.7:4789, carries a UDP send "to
// 127.0.0.9" out encapsulated. Under nettrap the veth peer and the VXLAN
// are refused (EPERM) and nothing arrives at 4789; with --userns=off it
// leaks again.
func TestEscapeNetnsVethVxlan(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	ln := e.ListenUDP(t, netip.AddrPortFrom(lab.Outside4, 4789))
	marker := "vxlan unguarded"
	mustEscape(t, e.run(t, harness.AsSelf, e.bins.Escapee, "veth-vxlan", lab.Outside4.String(), marker))
	waitRecord(t, ln, "the encapsulated datagram", containing(marker))
	for _, m := range sealedModes {
		t.Run(m.name, func(t *testing.T) {
			mark := lastSeq(t, e, ln)
			r := e.guarded(t, harness.AsSelf, m.flags, e.bins.Escapee, "veth-vxlan", lab.Outside4.String(), "vxlan "+m.name)
			mustFailWith(t, r, "EPERM")
			noDatagramAfter(t, e, ln, mark, "the guarded VXLAN ("+m.name+")")
		})
	}
	// --userns=off is the user's own choice to reopen the hole (docs/threat-model.md,
	// "Namespaces the test makes"): it leaks again.
	r := e.guarded(t, harness.AsSelf, []string{"--userns=off"}, e.bins.Escapee, "veth-vxlan", lab.Outside4.String(), "vxlan userns=off")
	mustEscape(t, r)
	waitRecord(t, ln, "the encapsulated datagram under --userns=off", containing("vxlan userns=off"))
}

// TestEscapeNetnsMacvlan: a macvlan on the starting namespace's interface
// (IFLA_LINK + IFLA_LINK_NETNSID) puts the program's own namespace on the
// segment; its own DNAT then sends a connect to 127.0.0.2:80 to
// 203.0.113.7. Under nettrap the macvlan is refused (EPERM) and nothing
// arrives.
func TestEscapeNetnsMacvlan(t *testing.T) {
	e, ln := redirectEnv(t)
	args := []string{e.bins.Escapee, "macvlan", lab.InsideLink, "10.211.0.50/24", "10.211.0.1"}
	marker := "macvlan unguarded"
	mustEscape(t, e.run(t, harness.AsSelf, append(args, marker)...))
	waitRecord(t, ln, "the connect through the macvlan", containing(marker))
	for _, m := range sealedModes {
		t.Run(m.name, func(t *testing.T) {
			mark := lastSeq(t, e, ln)
			r := e.guarded(t, harness.AsSelf, m.flags, append(args, "macvlan "+m.name)...)
			if m.name == "sealed" && inSealedNetns(t, harness.AsSelf) {
				// In the namespace --sealed gives the command the lab's
				// interface does not exist: the attack has nothing to
				// act on, and fails before nettrap sees a call.
				if o := parseEscapee(t, r); o.OK || !strings.Contains(o.Err, "no such network interface") {
					t.Errorf("macvlan in the sealed namespace: %+v, want no such network interface\nstderr: %s", o, r.stderr)
				}
			} else {
				mustFailWith(t, r, "EPERM")
			}
			noConnectionAfter(t, e, ln, mark, "the guarded macvlan ("+m.name+")")
		})
	}
}

// TestEscapeNetnsSetns: setns() into a namespace the program did not make
// (the lab's outside), then a DNAT there sends a connect to 127.0.0.2:80
// to 203.0.113.7. The namespace is named two ways: as a descriptor the
// program inherits (the kernel refuses setns with EPERM), and as
// /proc/PID/ns/net of a process in it (not the program's: the open is
// refused already, EACCES). Nothing arrives under nettrap, and the
// outside's ruleset is unchanged.
func TestEscapeNetnsSetns(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	ln := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 80))
	nsFile := outsideNsFile(t, e)
	sleeper := sleepOutside(t, e)
	cases := []struct {
		name, path, errno string
	}{
		{"inherited descriptor", "/proc/self/fd/3", "EPERM"},
		{"another process's", "/proc/" + strconv.Itoa(sleeper) + "/ns/net", "EACCES"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marker := "setns unguarded " + c.name
			mustEscape(t, e.runWithFile(t, nsFile, false, nil, e.bins.Escapee, "setns-dnat", c.path, marker))
			waitRecord(t, ln, "the DNATed connect", containing(marker))
			dropOutsideNAT(t, e)
			for _, m := range sealedModes {
				t.Run(m.name, func(t *testing.T) {
					mark := lastSeq(t, e, ln)
					r := e.runWithFile(t, nsFile, true, m.flags, e.bins.Escapee, "setns-dnat", c.path, "setns "+m.name)
					mustFailWith(t, r, c.errno)
					if dropOutsideNAT(t, e) {
						t.Errorf("LEAK under nettrap: the outside got table %s", escapeeNATTable)
					}
					noConnectionAfter(t, e, ln, mark, "the guarded setns ("+m.name+")")
				})
			}
		})
	}
}

// runWithFile runs argv inside as root with f as its descriptor 3: under
// nettrap with flags when guarded, else unguarded.
func (e labEnv) runWithFile(t *testing.T, f *os.File, guarded bool, flags []string, argv ...string) labRun {
	t.Helper()
	if guarded {
		argv = append(append(append([]string{e.bins.Nettrap}, flags...), "--"), argv...)
	}
	run := func(cmd *exec.Cmd) error {
		cmd.ExtraFiles = []*os.File{f}
		return e.Run(cmd)
	}
	stdout, stderr, code := runAs(t, harness.AsSelf, filepath.Dir(e.bins.Nettrap), run, argv...)
	return labRun{stdout: stdout, stderr: stderr, code: code}
}

// outsideNsFile opens the lab's outside namespace.
func outsideNsFile(t *testing.T, e labEnv) *os.File {
	t.Helper()
	var f *os.File
	if err := e.Outside(func() (err error) { f, err = os.Open("/proc/thread-self/ns/net"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// sleepOutside starts a process in the lab's outside namespace (as the
// outside host's own would be) and returns its pid.
func sleepOutside(t *testing.T, e labEnv) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := e.Outside(cmd.Start); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// dropOutsideNAT deletes the escapee's table from the outside namespace,
// telling whether it was there.
func dropOutsideNAT(t *testing.T, e labEnv) bool {
	t.Helper()
	found := false
	err := e.Outside(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
		if err != nil {
			return err
		}
		for _, tb := range tables {
			if tb.Name == escapeeNATTable {
				found = true
				c.DelTable(tb)
			}
		}
		return c.Flush()
	})
	if err != nil {
		t.Fatalf("outside's nftables: %v", err)
	}
	return found
}

// TestNetnsVethPeerOwnNamespace: a veth between two namespaces of the
// program's own, the peer's named by descriptor (IFLA_NET_NS_FD, as CNI
// plugins and vishvananda/netlink make it), works under nettrap, which
// sends the request itself with its own copy of that descriptor: the
// peer is where the program put it, in every mode.
func TestNetnsVethPeerOwnNamespace(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	mustEscape(t, e.run(t, harness.AsSelf, e.bins.Escapee, "veth-own"))
	for _, m := range sealedModes {
		t.Run(m.name, func(t *testing.T) {
			r := e.guarded(t, harness.AsSelf, m.flags, e.bins.Escapee, "veth-own")
			if o := parseEscapee(t, r); !o.OK {
				t.Errorf("veth between its own namespaces under nettrap failed (errno %s): %s\nstderr: %s", o.Errno, o.Err, r.stderr)
			}
			if lines := harness.BlockedLines(r.stderr); len(lines) > 0 {
				t.Errorf("blocked between its own namespaces: %q", lines)
			}
		})
	}
}

// TestNetnsOwnTopology: two namespaces the program makes, joined by a
// veth with documentation and private addresses on it, talk with TCP,
// UDP and a packet socket under nettrap, in both modes, and every such
// call is audited as allowed, class own-netns: nothing there leads out
// (the kernel refuses a link to the starting namespace:
// TestEscapeNetnsVethVxlan). With --userns=off the namespaces belong to
// nettrap's own user namespace, they do not qualify, and the same calls
// are treated as in the starting one: denied.
func TestNetnsOwnTopology(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	mustEscape(t, e.run(t, harness.AsSelf, e.bins.Escapee, "own-topology"))
	for _, m := range sealedModes {
		t.Run(m.name, func(t *testing.T) {
			r := e.guarded(t, harness.AsSelf, m.flags, e.bins.Escapee, "own-topology")
			if o := parseEscapee(t, r); !o.OK {
				t.Fatalf("own topology under nettrap failed (errno %s): %s\nstderr: %s", o.Errno, o.Err, r.stderr)
			}
			if lines := harness.BlockedLines(r.stderr); len(lines) > 0 {
				t.Errorf("blocked in its own namespaces: %q", lines)
			}
			seen := map[string]bool{}
			for _, rec := range r.audit {
				if rec.Class != "own-netns" || rec.Decision != "allowed" {
					t.Errorf("record %+v, want allowed own-netns", rec)
				}
				seen[rec.Syscall+" "+rec.Family+" "+rec.Dest] = true
			}
			wants := []string{"connect inet 192.0.2.1:80", "connect inet 10.77.0.1:5353", "socket packet ", "sendto packet AF_PACKET"}
			if lab.TestVariant(t) == lab.VariantKernel && m.name == "default" {
				// The kernel engine leaves sends to the kernel: a packet
				// socket's meets no program, and its frames stay in the
				// tree's namespaces (the backstop passes them there).
				wants = wants[:3]
			}
			for _, want := range wants {
				if !seen[want] {
					t.Errorf("no own-netns record %q in %v", want, seen)
				}
			}
		})
	}
	t.Run("userns-off", func(t *testing.T) {
		r := e.guarded(t, harness.AsSelf, []string{"--userns=off"}, e.bins.Escapee, "own-topology")
		mustFailWith(t, r, "EPERM")
		if len(harness.BlockedLines(r.stderr)) == 0 {
			t.Errorf("no blocked line under --userns=off:\n%s", r.stderr)
		}
		for _, rec := range r.audit {
			if rec.Class == "own-netns" {
				t.Errorf("own-netns record under --userns=off: %+v", rec)
			}
		}
	})
}
