// Package clean is a fixture for scripts/container-test.sh: a suite that
// only uses loopback (an httptest server), so it passes under nettrap.
package clean

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pong")
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "pong" {
		t.Fatalf("got %q, %v; want pong", b, err)
	}
}
