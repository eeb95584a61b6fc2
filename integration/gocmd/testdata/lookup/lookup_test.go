//go:debug netdns=go

// Package lookup holds a test that looks a name up and swallows the
// error, as grpc-go's resolver does with its service config: the blocked
// lookup must fail it, named in the output.
package lookup

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestLookupSwallowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupTXT(ctx, "_grpc_config.localhost")
	t.Logf("lookup: %v", err)
}

func TestClean(t *testing.T) {
	t.Log("no network here")
}
