// Package runmod serves the run fixture module (integration/testdata/run,
// a module of its own: leaky, clean, TestMain-leaky and parallel packages
// aiming only at the sandbox's fake hosts) to the tests that run the go
// command in it, in packages integration and integration/gocmd: its
// directory ([Dir]), the go command's environment there ([Env]), and a
// warm build cache for each test ([Gocache]).
package runmod
