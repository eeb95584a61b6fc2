// Package ghactions reports a nettrap summary to GitHub Actions: `::error`
// workflow commands (annotations) for blocked attempts, at most
// [MaxAnnotations] of them since GitHub shows no more per step, and the
// Markdown summary appended to the file named by $GITHUB_STEP_SUMMARY,
// kept under GitHub's [MaxStepSummary] limit.
package ghactions
