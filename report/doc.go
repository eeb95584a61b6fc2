// Package report reads nettrap audit logs (JSONL, one or more files, e.g.
// merged from CI shards) and turns them into the run summary: per package
// and test, what was blocked (operation, destination, class, count), what
// marked tests were allowed, stale and bad markers, and attempts at
// collection time; then the totals. Where the caller's stack was read, a
// blocked attempt's row says where it was made (a WHERE column) and names
// the test whose goroutine made it (started_by) before the test that was
// running; timing alone names no one. It renders the summary as text (the end of every
// `nettrap -- go test` run), Markdown (GitHub step summaries) or JSON.
//
// It is pure: it neither runs nor confines anything.
package report
