// Command nettrap: the CLI. Flags, NETTRAP_* variables and wiring only;
// the work is done by the supervisor, guard, policy, classify and audit
// packages.
package main
