package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/procfs"
)

// TestGoFloorMakesTheCalls runs the bench workload under gofloor: its
// calls are trapped and made by gofloor (connect, sendto, the GSO
// sendmsg), and the workload, which checks what arrives, succeeds.
func TestGoFloorMakesTheCalls(t *testing.T) {
	requireUserNotif(t)
	if os.Getenv("NETTRAP_HUB") != "" && procfs.SeccompFiltered() {
		t.Skip("under nettrap: gofloor's seccomp listener would be a second one on the chain (EBUSY)")
	}
	dir := t.TempDir()
	gofloor, workload := filepath.Join(dir, "gofloor"), filepath.Join(dir, "workload")
	for bin, pkg := range map[string]string{gofloor: ".", workload: "../workload"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	counts := regexp.MustCompile(`gofloor: (\d+) made, (\d+) continued`)
	for _, c := range []struct {
		op   string
		n    int
		args []string
	}{{"tcpconnect", 200, nil}, {"udpsendto", 200, nil}, {"udpgso", 50, nil}, {"tcpconnect", 200, []string{"-n"}}} {
		args := append(append([]string{"-c"}, c.args...), workload, c.op, strconv.Itoa(c.n))
		cmd := exec.Command(gofloor, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gofloor %v: %v\n%s%s", args, err, out, stderr.String())
		}
		m := counts.FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("gofloor %v said no counts:\n%s", args, stderr.String())
		}
		if made, _ := strconv.Atoi(m[1]); made < c.n {
			t.Errorf("gofloor %v made %d calls, want at least the workload's %d", args, made, c.n)
		}
	}
}

// requireUserNotif skips where the kernel lacks seccomp user
// notification, except under CI=true.
func requireUserNotif(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err == nil && strings.Contains(string(b), "user_notif") {
		return
	}
	why := "the kernel lacks SECCOMP_RET_USER_NOTIF"
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}
