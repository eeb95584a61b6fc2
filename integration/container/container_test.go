package container

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestDockerfileBaseQualified: the Dockerfile's default base image is named
// in full (registry/repository:tag). Podman refuses a short name where no
// unqualified-search registry is configured, and the container test above
// builds from a local base, so it would not see a short default.
func TestDockerfileBaseQualified(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var base string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ARG BASE="); ok {
			base = v
		}
	}
	if base == "" {
		t.Fatal("the Dockerfile has no ARG BASE=... default")
	}
	if !qualifiedImage(base) {
		t.Errorf("ARG BASE=%s is a short name: name the registry (docker.io/library/...)", base)
	}
}

// qualifiedImage says whether ref names its registry: a first path
// component with a dot or a port, or localhost, as containers/image reads it.
func qualifiedImage(ref string) bool {
	host, rest, ok := strings.Cut(ref, "/")
	return ok && rest != "" && (strings.ContainsAny(host, ".:") || host == "localhost")
}

func TestQualifiedImage(t *testing.T) {
	for ref, want := range map[string]bool{
		"docker.io/library/golang:1.26": true,
		"localhost/nettrap-go-base:go1": true,
		"registry:5000/golang":          true,
		"golang:1.26":                   false,
		"library/golang:1.26":           false,
		"docker.io":                     false,
	} {
		if got := qualifiedImage(ref); got != want {
			t.Errorf("qualifiedImage(%q) = %v, want %v", ref, got, want)
		}
	}
}
