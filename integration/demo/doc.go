// Package demo runs the README's first command, scripts/demo.sh, the way a
// reader would, and checks what it shows: the examples/ suite under nettrap,
// with the test that forgot its mock blocked and the marked live test let
// through to the fake API. The README's quick start shows this run's failure
// and summary: the test checks that the demo prints them (durations, run id
// and audit log path aside).
//
// The whole test binary runs inside the integration sandbox (a private
// network namespace with only lo), and demo.sh makes a namespace of its own
// inside it: the demo's documentation address 203.0.113.80 is never aimed at
// a real network.
package demo
