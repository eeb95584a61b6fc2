// Package victimbuild builds the programs the integration tests run — the
// victim and nettrap itself — once per test binary, into a temporary
// directory, and hands out their paths.
//
// Builds run with GOPROXY=off and GOTOOLCHAIN=local: inside the sandbox there
// is no network, and a build must never try to reach one.
//
// With NETTRAP_TEST_PREBUILT=DIR (package prebuilt) nothing is built: each
// program is DIR/<base of its import path> (victim, escapee, forgehub,
// nettrap), and one missing there fails the test that asked for it.
package victimbuild
