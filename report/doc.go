// Package report reads nettrap audit logs (JSONL, one or more files, e.g.
// merged from CI shards) and turns them into the run summary: per package
// and test, what was blocked (operation, destination, class, count), what
// marked tests were allowed, stale markers, and attempts at collection time;
// then the totals. It renders the summary as text (the end of every
// `nettrap -- go test` run), Markdown (GitHub step summaries) or JSON.
//
// It is pure: it neither runs nor confines anything.
package report
