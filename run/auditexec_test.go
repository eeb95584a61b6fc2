package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/tmpdir"
)

// privateDir makes a directory only this user may enter, and refuses one
// someone else could have laid in the way: open to others, or a link.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	if _, err := privateDir(fresh); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made %v (%v), want mode 0700", fi.Mode(), err)
	}
	if _, err := privateDir(fresh); err != nil {
		t.Errorf("the same directory again: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(open); err == nil {
		t.Error("a directory others may write: no error")
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(link); err == nil {
		t.Error("a symbolic link to a private directory: no error")
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(file); err == nil {
		t.Error("a file: no error")
	}
}

// pruneExecLogs keeps the tmpdir.Keep logs of go commands last written,
// and removes the older ones with their marks; other files stay.
func TestPruneExecLogs(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	var logs []string
	for i := range tmpdir.Keep + 3 {
		p := filepath.Join(dir, fmt.Sprintf("go-test-%d-1.jsonl", 100+i))
		for _, f := range []string{p, p + ".said"} {
			if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		at := base.Add(time.Duration(i) * time.Minute) // the first written first
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, p)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pruneExecLogs(dir)
	for i, p := range logs {
		_, err := os.Stat(p)
		_, serr := os.Stat(p + ".said")
		if gone := i < 3; gone != os.IsNotExist(err) || gone != os.IsNotExist(serr) {
			t.Errorf("log %d of %d: %v, mark %v; want the %d last written kept, with their marks", i+1, len(logs), err, serr, tmpdir.Keep)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file: %v", err)
	}
}

// execSummary sums up one package's findings of one run, naming the log;
// a package with none (or only allowed attempts) prints nothing.
func TestExecSummary(t *testing.T) {
	log := filepath.Join(t.TempDir(), "go-test-1-1.jsonl")
	w, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []audit.Record{
		{Package: "example.com/m/a", Test: "TestA", RunID: "r1", Syscall: "connect", Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied},
		{Package: "example.com/m/b", Test: "TestB", RunID: "r1", Syscall: "connect", Dest: "203.0.113.8:443", Class: "external", Decision: audit.Denied},
		{Package: "example.com/m/a", Test: "TestA", RunID: "r0", Syscall: "connect", Dest: "203.0.113.9:443", Class: "external", Decision: audit.Denied},
		{Package: "example.com/m/c", Test: "TestC", RunID: "r1", Syscall: "connect", Dest: "203.0.113.7:443", Class: "external", Decision: audit.Allowed},
	} {
		r.Schema = audit.SchemaVersion
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := execSummary(&b, log, "r1", "example.com/m/a"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "nettrap: 1 outbound network attempt blocked in 1 package (run r1; audit log "+log+")\n") ||
		!strings.Contains(out, "203.0.113.7:443") || strings.Contains(out, "203.0.113.8") || strings.Contains(out, "203.0.113.9") {
		t.Errorf("summary of package a, run r1:\n%s", out)
	}
	b.Reset()
	if err := execSummary(&b, log, "r1", "example.com/m/c"); err != nil || b.Len() != 0 {
		t.Errorf("a package with only an allowed attempt: %v\n%s", err, b.String())
	}
}
