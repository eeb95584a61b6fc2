// Package victimbuild builds the programs the integration tests run — the
// victim and nettrap itself — once per test binary, into a temporary
// directory, and hands out their paths.
//
// Builds run with GOPROXY=off and GOTOOLCHAIN=local: inside the sandbox there
// is no network, and a build must never try to reach one.
package victimbuild
