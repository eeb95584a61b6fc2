// Package errlog keeps the supervisor's own errors for Session.Errors
// (Log): the first few, and a count of the rest, which it reports as
// "and N more".
package errlog
