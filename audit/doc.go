// Package audit is nettrap's audit trail: one JSON object per line, one
// line per audited attempt, never torn, even with many writers.
package audit
