// Package report reads nettrap audit logs (JSONL, one or more files, e.g.
// merged from CI shards) and turns them into the run summary: per package
// and test, what was blocked (operation, destination, class, count), what
// marked tests were allowed, stale and bad markers, and attempts at
// collection time; then the totals. Under a table of blocked attempts, a
// hint names the test a leftover goroutine may come from, for each test
// whose every attempt came right after another test ended (after_test in
// the records of one run). It renders the summary as text (the end of every
// `nettrap -- go test` run), Markdown (GitHub step summaries) or JSON.
//
// It is pure: it neither runs nor confines anything.
package report
