package ghactions

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/report"
)

// ReportShared reports s to GitHub Actions for one of several nettraps
// that share a step and run at once: under go test -exec, one per
// package, each knowing its own package's findings. state is a file
// they share (made if missing); each takes a lock on it for the whole
// of its report, so that
//
//   - the annotations of all of them count against one budget of
//     MaxAnnotations, GitHub's per step, and an annotation one of them
//     wrote already is not written again (state holds those written,
//     one a line);
//   - each appends its block of the step summary (the file stepSummary
//     names; "" for none) whole, one after the other: one block per
//     package with findings, headed by s.Scope. A package with none
//     adds nothing: a hundred clean packages would otherwise add a
//     hundred blocks that say so.
//
// Annotations go to w, with a line saying how many of s's were left out
// for the budget.
func ReportShared(w io.Writer, s *report.Summary, state, stepSummary string) error {
	f, err := os.OpenFile(state, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("annotations: %w", err)
	}
	defer f.Close()
	if err := flock(f); err != nil {
		return fmt.Errorf("annotations: lock %s: %w", state, err)
	}
	written, err := readLines(f)
	if err != nil {
		return fmt.Errorf("annotations: %s: %w", state, err)
	}
	out, add := budget(annotations(s, workspaceRoot()), written, s.Scope)
	if _, err := f.WriteString(strings.Join(add, "")); err != nil {
		return fmt.Errorf("annotations: %s: %w", state, err)
	}
	if _, err := io.WriteString(w, out); err != nil {
		return err
	}
	if stepSummary == "" || s.Clean() {
		return nil
	}
	return AppendStepSummary(stepSummary, s)
}

// budget picks, of the annotations all, those not written yet while
// fewer than MaxAnnotations have been; out is what to print (with a
// line for those left out, of package pkg), add what to note as
// written.
func budget(all []string, written map[string]bool, pkg string) (out string, add []string) {
	var b strings.Builder
	n, left := len(written), 0
	for _, a := range all {
		switch {
		case written[a]:
		case n >= MaxAnnotations:
			left++
		default:
			written[a] = true
			add = append(add, a)
			b.WriteString(a)
			n++
		}
	}
	if left > 0 {
		b.WriteString(moreLine(left, pkg))
	}
	return b.String(), add
}

// flock takes an exclusive lock on f, waiting for it; closing f drops
// it.
func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

// readLines reads the annotations a state file holds, each with its
// newline, as annotations returns them.
func readLines(f *os.File) (map[string]bool, error) {
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	lines := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines[sc.Text()+"\n"] = true
	}
	return lines, sc.Err()
}

// workspaceRoot is the root annotations' files are relative to:
// GITHUB_WORKSPACE, else the working directory.
func workspaceRoot() string {
	root := os.Getenv("GITHUB_WORKSPACE")
	if root == "" {
		root, _ = os.Getwd()
	}
	return root
}
