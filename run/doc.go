// Package run runs one command under nettrap, as the CLI chose it (see
// Kind): a command or a Go test binary confined by the supervisor, `go
// test` confined as a whole with its test cache (each test binary wrapped
// as it starts, gocache.go) or with every test binary under an inner
// nettrap (-exec, --cache=off), or the inner side of an outer nettrap's
// run (the hub). It owns the run's
// lifetime: the reaper that takes the command's tree down with nettrap,
// the one signal forwarder, the audit log and summary of the run, and
// the exit status, which Run returns as an *ExitError (no globals). Each
// mode gives back what it acquires by defers on every path (for a
// confined run, confined.release, in an order that matters; the run's
// directory, runLog.abort), and computes its status in one end step
// (confined.finish, finishRun).
//
// It does not know how settings are spelled on the command line or in
// the environment: Options.Names does (the CLI's one table of names), for
// messages that name what the user wrote and for the environment of the
// nettraps a run starts.
package run
