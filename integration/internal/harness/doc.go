// Package harness runs nettrap and other programs from the integration
// tests (package integration and integration/gocmd) and reads what they
// leave: the nettrap the tests start ([Nettrap]), a run's outcome
// ([Run]), nettrap's lines in it, the audit log, the fake hosts' silence,
// and the users a test runs as.
package harness
