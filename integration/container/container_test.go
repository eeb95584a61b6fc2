package container

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runGuard only stops a hung build; it is not an assertion about speed.
const runGuard = 25 * time.Minute

func TestContainerImage(t *testing.T) {
	if os.Getenv("NETTRAP_CONTAINER_TEST") != "1" {
		t.Skip("set NETTRAP_CONTAINER_TEST=1 to build and run the container image with Podman (takes minutes, needs root)")
	}
	if reason := missing(); reason != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true and NETTRAP_CONTAINER_TEST=1, so this is fatal)", reason)
		}
		t.Skip(reason)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "container-test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("container-test.sh: %v\n%s", err, out.String())
	}
	t.Logf("container-test.sh:\n%s", out.String())
}

// missing says why the script cannot run here, or "". The script installs
// podman and runc itself with apt-get when they are missing.
func missing() string {
	if os.Geteuid() != 0 {
		return "the container test needs root (Podman's root storage, and apt-get for podman and runc)"
	}
	for _, tool := range []string{"go", "tar", "dpkg-deb", "apt-get"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "the container test needs " + tool + ": " + err.Error()
		}
	}
	return ""
}
