// Command nettrap: the CLI. Wiring only: the one table of flags and
// NETTRAP_* variables (table.go), the subcommands, the choice of the kind
// of run, and one run.Run; package run does the work.
package main
