// Package audit is nettrap's audit trail: one JSON object per line, one
// line per audited attempt, never torn, even with many writers; the
// vocabulary of its fields; and the wording of a blocked attempt from its
// record (Message, Blocked), shared by guard's message lines and the
// summaries. It imports no other nettrap package.
package audit
