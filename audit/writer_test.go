package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriteOneLinePerRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{Time: time.Unix(0, 0).UTC(), RunID: "r1", PID: 7, TID: 8, Syscall: "connect",
		Family: "inet", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: "denied", Reason: "external destination"}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got Record
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	rec.Schema = SchemaVersion
	if fmt.Sprint(got) != fmt.Sprint(rec) {
		t.Errorf("got %+v\nwant %+v", got, rec)
	}
	if strings.Count(string(b), "\n") != 1 {
		t.Errorf("want exactly one line, got %q", b)
	}
}

// Many processes append to one log at once (every test binary of a run):
// no record may be lost or torn.
func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	if os.Getenv("NETTRAP_AUDIT_CHILD") != "" {
		return
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const procs, perProc = 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
			cmd.Env = append(os.Environ(), "NETTRAP_AUDIT_CHILD="+path, "NETTRAP_AUDIT_ID="+strconv.Itoa(p), "NETTRAP_AUDIT_N="+strconv.Itoa(perProc), "GORACE=atexit_sleep_ms=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("writer %d: %v: %s", p, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("torn line %q: %v", sc.Text(), err)
		}
		seen[r.RunID+"/"+r.Reason] = true
	}
	if len(seen) != procs*perProc {
		t.Errorf("got %d distinct records, want %d", len(seen), procs*perProc)
	}
}

// TestHelperWriter is the child of TestConcurrentWritersAcrossProcesses.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv("NETTRAP_AUDIT_CHILD")
	if path == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("NETTRAP_AUDIT_N"))
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Long reasons make lines bigger than a pipe buffer, where tearing
	// would show if the writes were not kept whole.
	pad := strings.Repeat("x", 5000)
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 3 {
				r := Record{RunID: os.Getenv("NETTRAP_AUDIT_ID"), Reason: strconv.Itoa(i) + pad, Syscall: "connect", Decision: "denied"}
				if err := w.Write(r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A full disk is an error the caller sees, with the cause.
func TestWriteFullDisk(t *testing.T) {
	w, err := Open("/dev/full")
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer w.Close()
	err = w.Write(Record{Syscall: "connect", Decision: "denied"})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write to /dev/full = %v, want ENOSPC", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir", "a.jsonl")); err == nil {
		t.Fatal("Open in a missing directory did not fail")
	}
}

// OpenOnFirstWrite makes no file until a record comes; then it appends
// as Open does (to a log another writer made, too).
func TestOpenOnFirstWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	idle := OpenOnFirstWrite(path)
	if idle.Opened() {
		t.Error("opened before any record")
	}
	if err := idle.Close(); err != nil {
		t.Errorf("close without a record: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a writer with no record made the file: %v", err)
	}
	for i := range 2 {
		w := OpenOnFirstWrite(path)
		if err := w.Write(Record{RunID: "r" + strconv.Itoa(i), Decision: WouldDeny}); err != nil {
			t.Fatal(err)
		}
		if !w.Opened() {
			t.Error("not opened after a record")
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"r0"`) || !strings.Contains(string(b), `"r1"`) {
		t.Errorf("log %q (%v), want both records", b, err)
	}
	if err := OpenOnFirstWrite(filepath.Join(path, "x")).Write(Record{}); err == nil {
		t.Error("a record to a path that cannot be made: no error")
	}
}
