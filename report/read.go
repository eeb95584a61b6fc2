package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/nettrap/nettrap/audit"
)

// maxLine bounds one audit record; the writer never writes longer lines
// than a record with a long argv or reason.
const maxLine = 1 << 20

// Read parses a JSONL audit log. Every non-empty line must be one complete
// JSON object: a torn or foreign line is an error naming its line number,
// since a summary built on a damaged log would be wrong without saying so.
func Read(r io.Reader, name string) ([]audit.Record, error) {
	var out []audit.Record
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec audit.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("%s:%d: not an audit record: %w", name, n, err)
		}
		if rec.Schema != audit.SchemaVersion {
			return out, fmt.Errorf("%s:%d: audit schema %d, this nettrap reads %d", name, n, rec.Schema, audit.SchemaVersion)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// ReadFiles reads and concatenates the audit logs at paths.
func ReadFiles(paths ...string) ([]audit.Record, error) {
	var all []audit.Record
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		recs, err := Read(f, p)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}
