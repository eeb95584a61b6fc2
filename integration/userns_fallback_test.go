package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/lab"
)

// usernsFallbackNotice starts the line nettrap says once when it cannot
// give the command a user namespace of its own.
const usernsFallbackNotice = "nettrap: cannot give the command a user namespace of its own"

// withoutUserns runs argv as root of a user namespace the test makes
// (identity-mapped, so root keeps its capabilities over what that
// namespace owns) in which no further user namespace may be made
// (user.max_user_namespaces=0 there): nettrap holds CAP_SYS_ADMIN and
// cannot make one, as under a container profile that refuses it.
func withoutUserns(t *testing.T, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	script := `echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, argv...)...)
	all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: all, GidMappings: all,
		GidMappingsEnableSetgroups: true}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		skipOrFail(t, "cannot make a user namespace for nettrap to run in: "+err.Error())
	}
	if code = cmd.ProcessState.ExitCode(); code == 99 {
		skipOrFail(t, "cannot set user.max_user_namespaces in a user namespace of the test's: "+errb.String())
	}
	return out.String(), errb.String(), code
}

// TestNetnsUsernsFallback: where nettrap, holding CAP_SYS_ADMIN, cannot
// make a user namespace, it says so once, `nettrap version` names the
// fallback, and CAP_SYS_ADMIN leaves the command's bounding set: making a
// network namespace fails with EPERM (with --userns=off it works, so the
// EPERM is the fallback's).
func TestNetnsUsernsFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: without CAP_SYS_ADMIN nettrap makes no user namespace, and has nothing to fall back from")
	}
	bins := lab.Programs(t)
	out, _, _ := withoutUserns(t, bins.Nettrap, "version")
	if !strings.Contains(out, "user namespace: none (") || !strings.Contains(out, "CAP_SYS_ADMIN and CAP_SYS_PTRACE are dropped") {
		t.Errorf("nettrap version does not name the fallback:\n%s", out)
	}
	out, stderr, _ := withoutUserns(t, bins.Nettrap, "--", bins.Escapee, "own-netns-route", "write")
	if n := strings.Count(stderr, usernsFallbackNotice); n != 1 {
		t.Errorf("the fallback was said %d times, want once:\n%s", n, stderr)
	}
	o := parseEscapee(t, labRun{stdout: lab.DropNotice(out), stderr: stderr})
	if o.OK || o.Errno != "EPERM" || !strings.HasPrefix(o.Err, "unshare") {
		t.Errorf("own network namespace under the fallback: ok=%v errno=%q err=%q, want unshare EPERM\nstderr: %s", o.OK, o.Errno, o.Err, stderr)
	}
	out, stderr, _ = withoutUserns(t, bins.Nettrap, "--userns=off", "--", bins.Escapee, "own-netns-route", "write")
	if o := parseEscapee(t, labRun{stdout: lab.DropNotice(out), stderr: stderr}); !o.OK {
		t.Errorf("with --userns=off the own namespace failed (errno %s): %s\nstderr: %s", o.Errno, o.Err, stderr)
	}
	if strings.Contains(stderr, usernsFallbackNotice) {
		t.Errorf("--userns=off still fell back:\n%s", stderr)
	}
	// CAP_SYS_PTRACE leaves the bounding set too: in nettrap's user
	// namespace it would override nettrap's non-dumpability (see
	// supervisor/userns.go); --userns=off keeps it.
	for _, c := range []struct {
		flag string
		want bool
	}{{"--userns=auto", false}, {"--userns=off", true}} {
		out, stderr, _ := withoutUserns(t, bins.Nettrap, c.flag, "--", "grep", "^CapBnd:", "/proc/self/status")
		if got, err := hasCap(out, unix.CAP_SYS_PTRACE); err != nil || got != c.want {
			t.Errorf("%s: CAP_SYS_PTRACE in the command's bounding set %v (%v), want %v\n%s%s", c.flag, got, err, c.want, out, stderr)
		}
	}
	// Under the ptrace engine CAP_NET_ADMIN goes too: that engine's
	// netlink hand-over, which a thread holding it would need, takes from
	// nettrap, which the tree's Landlock domain refuses.
	engines := []string{"notify", "ptrace"}
	if lab.TestVariant(t) != lab.VariantDefault {
		engines = engines[1:] // a listener above, or the ptrace engine forced: no notify engine to compare
	}
	for _, engine := range engines {
		out, stderr, _ := withoutUserns(t, bins.Nettrap, "--engine="+engine, "--", "grep", "^CapBnd:", "/proc/self/status")
		if got, err := hasCap(out, unix.CAP_NET_ADMIN); err != nil || got != (engine == "notify") {
			t.Errorf("--engine=%s: CAP_NET_ADMIN in the command's bounding set %v (%v)\n%s%s", engine, got, err, out, stderr)
		}
	}
}

// hasCap reads a "CapBnd:\tHEX" line and tells whether it holds cap.
func hasCap(line string, cap int) (bool, error) {
	_, hex, ok := strings.Cut(strings.TrimSpace(lab.DropNotice(line)), "\t")
	if !ok {
		return false, fmt.Errorf("no capability line in %q", line)
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	return v&(1<<cap) != 0, err
}
