package gocmd

import (
	"archive/zip"
	"bytes"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// proxyAddr is the fake module proxy's address, on the sandbox's lo: a
// private address, denied to tests by default.
const proxyAddr = "172.16.0.1:8080"

// fakeProxy serves example.com/dep v1.0.0 as a GOPROXY, and counts the
// requests by path.
type fakeProxy struct {
	mu   sync.Mutex
	hits map[string]int
}

func (p *fakeProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[path]
}

func startFakeProxy(t *testing.T) *fakeProxy {
	t.Helper()
	const mod = "module example.com/dep\n\ngo 1.21\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{
		"go.mod": mod,
		"dep.go": "package dep\n\n// Answer is what the fixture's test checks.\nfunc Answer() int { return 42 }\n",
	} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/example.com/dep/@v/list":        []byte("v1.0.0\n"),
		"/example.com/dep/@v/v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`),
		"/example.com/dep/@v/v1.0.0.mod":  []byte(mod),
		"/example.com/dep/@v/v1.0.0.zip":  zb.Bytes(),
	}
	p := &fakeProxy{hits: map[string]int{}}
	ln, err := net.Listen("tcp", proxyAddr)
	if err != nil {
		t.Fatalf("fake module proxy: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hits[r.URL.Path]++
		p.mu.Unlock()
		if b, ok := files[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

// proxyFixture writes a module that needs example.com/dep from the proxy
// (package uses) and a test that calls the proxy itself (package leaks).
func proxyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/proxyfix\n\ngo 1.26\n\nrequire example.com/dep v1.0.0\n",
		"uses/uses_test.go": `package uses

import (
	"testing"

	"example.com/dep"
)

func TestAnswer(t *testing.T) {
	if dep.Answer() != 42 {
		t.Fatal("wrong answer")
	}
}
`,
		"leaks/leaks_test.go": `package leaks

import (
	"net/http"
	"testing"
)

// TestProxy asks the module proxy itself, and swallows the error.
func TestProxy(t *testing.T) {
	resp, err := http.Get("http://` + proxyAddr + `/from-test")
	if err == nil {
		resp.Body.Close()
	}
	t.Log("get:", err)
}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunGoTestCacheToolchain: the confined go command still downloads
// modules (its own calls are the toolchain's: allowed, audited), while a
// test's call to the very same proxy is denied.
func TestRunGoTestCacheToolchain(t *testing.T) {
	lab.SlowUnderOuter(t, "155 s (its default run alone)")
	sandbox.Require(t)
	proxy := startFakeProxy(t)
	env := func(t *testing.T) []string {
		return runmod.Env("GOPROXY=http://"+proxyAddr, "GOSUMDB=off", "GOFLAGS=-mod=mod",
			"GOCACHE="+runmod.GocacheWith(t, "net/http"), "GOMODCACHE="+t.TempDir())
	}
	// Bare, the test's request reaches the proxy.
	bare := harness.RunIn(t, proxyFixture(t), env(t), "go", "test", "./leaks/")
	if bare.Code != 0 || proxy.count("/from-test") != 1 {
		t.Fatalf("bare run: exit %d, %d requests from the test, want 0 and 1\n%s%s", bare.Code, proxy.count("/from-test"), bare.Stdout, bare.Stderr)
	}

	for _, flags := range [][]string{nil, {"--sealed"}} {
		// Under --sealed too: the go command's own process downloads.
		dir := proxyFixture(t)
		log := harness.AuditPath(t)
		args := append(append([]string{"--audit-log", log}, flags...), "--", "go", "test", "./...")
		zips := proxy.count("/example.com/dep/@v/v1.0.0.zip")
		run := harness.RunIn(t, dir, env(t), harness.Nettrap(t), args...)
		if run.Code != 1 {
			t.Fatalf("%v: exit %d, want 1 (the leaky test failed)\n%s%s", flags, run.Code, run.Stdout, run.Stderr)
		}
		if proxy.count("/example.com/dep/@v/v1.0.0.zip") == zips {
			t.Errorf("%v: the go command did not download the module:\n%s", flags, run.Stderr)
		}
		if n := proxy.count("/from-test"); n != 1 {
			t.Errorf("%v: the test's request reached the proxy under nettrap (%d requests in all, 1 of them bare)", flags, n)
		}
		for pkg, status := range map[string]string{"uses": "ok  ", "leaks": "FAIL"} {
			if !strings.Contains(run.Stdout, status+"\texample.com/proxyfix/"+pkg+"\t") {
				t.Errorf("%v: %s is not %s:\n%s", flags, pkg, strings.TrimSpace(status), run.Stdout)
			}
		}
		var toolchain, denied bool
		for _, r := range readRunAudit(t, log) {
			if r.Dest != proxyAddr {
				continue
			}
			switch {
			case r.Decision == "allowed" && r.Test == "" && strings.Contains(r.Reason, "go command"):
				toolchain = true
			case r.Decision == "denied" && r.Test == "TestProxy" && r.Package == "example.com/proxyfix/leaks":
				denied = true
			default:
				t.Errorf("%v: unexpected record for the proxy: %+v", flags, r)
			}
		}
		if !toolchain || !denied {
			t.Errorf("%v: audit log: the go command's download allowed %v, TestProxy denied %v; want both", flags, toolchain, denied)
		}
	}
}
