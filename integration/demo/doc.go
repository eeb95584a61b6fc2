// Package demo runs the README's first command, scripts/demo.sh, the way a
// reader would, and checks what it shows: the examples/ suite under nettrap,
// with the test that forgot its mock blocked and the marked live test let
// through to the fake API. The README's quick start shows this run's failure
// and summary: the test checks that the demo prints them (durations, run id
// and audit log path aside). TestQuickStart follows the quick start word
// for word on a new module: its commands, run as written with nettrap on
// PATH, print what the README says (a clean run's one line, a forgotten
// mock's failure, the marker, `--allow`, `nettrap report`), and the fake
// host behind the module's documentation address sees only the marked
// test's connection. TestForkPRWorkflow runs the fork-PR workflow the
// docs give (docs/examples/github/pull-request.yml) as GitHub's runner
// would, its steps in order, as a user that is not root: `go install
// …@latest` installs this working tree from a module proxy in a
// directory, and `nettrap --sealed -- go test ./...` fails the job on the
// demo suite and passes on a clean module.
//
// The whole test binary runs inside the integration sandbox (a private
// network namespace with only lo), and demo.sh makes a namespace of its own
// inside it: the demo's documentation address 203.0.113.80 is never aimed at
// a real network.
package demo
