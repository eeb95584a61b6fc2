// Package gocmd holds nettrap's end-to-end tests that run the go command:
// `nettrap -- go test` (with its test cache, under a hub, with gotestsum),
// `go test -exec nettrap`, and test binaries of the fixture modules in
// testdata built with `go test -c`, under the real nettrap binary, inside
// a private network namespace (integration/internal/sandbox) whose only
// "remote" hosts are recording fakes (integration/internal/fakehost).
// Package integration holds the rest (the escape matrix, the engines,
// emulation); `go test ./...` runs the two at once.
package gocmd
