// Package ghactions reports a nettrap summary to GitHub Actions: `::error`
// workflow commands (annotations) for blocked attempts, at most
// [MaxAnnotations] of them since GitHub shows no more per step, and the
// Markdown summary appended to the file named by $GITHUB_STEP_SUMMARY,
// kept under GitHub's [MaxStepSummary] limit. An attempt made in a
// helper is annotated on the test's own line that called it.
//
// [ReportShared] is for nettraps that report one package each, at once,
// in one step (go test -exec): they share the annotation budget through
// a locked state file, write no annotation twice, and append one
// step-summary block each.
package ghactions
