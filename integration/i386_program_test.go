package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// cConnectPort connects to argv[1]:argv[2] (IPv4) with libc's socket and
// connect and prints the outcome.
const cConnectPort = `#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s ipv4 port\n", argv[0]);
		return 2;
	}
	struct sockaddr_in sa = {0};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", argv[1]);
		return 2;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		printf("socket errno=%s\n", strerror(errno));
		return 0;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		printf("errno=%s\n", strerror(errno));
		return 0;
	}
	printf("connected\n");
	return 0;
}
`

// buildI386C compiles src as a static 32-bit x86 program. Without a gcc
// that can (Debian: gcc-multilib) the test skips, or fails when CI=true:
// .ci/run installs it.
func buildI386C(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog32")
	cc, err := exec.LookPath("gcc")
	var out []byte
	if err == nil {
		out, err = exec.Command(cc, "-m32", "-static", "-O1", "-o", bin, file).CombinedOutput()
	}
	if err != nil {
		msg := "gcc -m32 -static cannot build a 32-bit program: " + err.Error() + "\n" + string(out) +
			"\ninstall Debian's gcc-multilib (apt-get install gcc-multilib), as .ci/run does"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// TestNettrapConfinesI386Program runs a whole 32-bit program, not a 64-bit
// one making i386 calls. Unguarded, its libc connect reaches the fake host
// (so a refusal under nettrap is nettrap's doing); under nettrap it starts
// and runs (every call it makes is an i386 one), its network call fails
// with EPERM and a denial line, and nothing arrives.
func TestNettrapConfinesI386Program(t *testing.T) {
	sandbox.Require(t)
	requireI386(t)
	bin := buildI386C(t, cConnectPort)
	dest := fakehost.TCP("203.0.113.7:443")
	h := fakehost.Start(t, dest)

	mark := h.Mark()
	out, err := exec.Command(bin, "203.0.113.7", "443").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "connected" {
		t.Fatalf("the 32-bit program unguarded: %v, output %q, want connected", err, out)
	}
	if _, ok := h.WaitFor(mark, fakehost.To(dest.Proto, dest.Addr), harness.Timeout); !ok {
		t.Fatalf("the unguarded connect never reached %s:\n%s", dest, h.Dump())
	}

	// Under either engine: the ptrace engine answers a 32-bit call through
	// the 64-bit register layout (a 32-bit one once let it run).
	for _, engine := range []string{"auto", "ptrace"} {
		mark = h.Mark()
		run := harness.RunNettrap(t, "--engine="+engine, "--", bin, "203.0.113.7", "443")
		// The i386 socket call is denied before connect is reached
		// (nettrap does not decode 32-bit calls); either refusal is
		// EPERM, and the program's exit 0 becomes nettrap's 1 (a denied
		// attempt).
		if got := strings.TrimSpace(run.Stdout); run.Code != 1 || (got != "errno=Operation not permitted" && got != "socket errno=Operation not permitted") {
			t.Errorf("%s: the 32-bit program under nettrap: exit %d, stdout %q, want EPERM\nstderr: %s", engine, run.Code, run.Stdout, run.Stderr)
		}
		lines := harness.BlockedLines(run.Stderr)
		if len(lines) != 1 || !strings.Contains(lines[0], "(i386 ABI)") || !strings.Contains(lines[0], "prog32") {
			t.Errorf("%s: want one denial line naming the i386 ABI and prog32, got %q\nstderr: %s", engine, lines, run.Stderr)
		}
		harness.AssertNothingArrived(t, h, mark, dest)
	}
}
