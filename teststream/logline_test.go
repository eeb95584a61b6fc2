package teststream

import "testing"

func TestLogLine(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want Log
		ok   bool
	}{
		{"    x_test.go:12: nettrap:network\n", Log{"x_test.go", 12, "nettrap:network"}, true},
		{"    x_test.go:12: nettrap:network", Log{"x_test.go", 12, "nettrap:network"}, true},
		{"    x_test.go:12: \n", Log{"x_test.go", 12, ""}, true},
		{"    /src/m/x_test.go:7: a: b:1: c\n", Log{"/src/m/x_test.go", 7, "a: b:1: c"}, true},
		{"    C:dir/x.go:7: m\n", Log{"C:dir/x.go", 7, "m"}, true},
		{"    ???:1: m\n", Log{"???", 1, "m"}, true},
		{"nettrap:network\n", Log{}, false},
		{"    nettrap:network\n", Log{}, false},
		{"        x_test.go:12: nettrap:network\n", Log{}, false}, // a log's second line
		{"   x_test.go:12: nettrap:network\n", Log{}, false},
		{"\tx_test.go:12: nettrap:network\n", Log{}, false},
		{"    x_test.go:: m\n", Log{}, false},
		{"    x_test.go:12:m\n", Log{}, false},
		{"    x_test.go:99999999999999999999: m\n", Log{}, false},
		{"no newline    x_test.go:12: nettrap:network\n", Log{}, false},
	} {
		got, ok := LogLine(&Event{Kind: KindOutput, LineStart: true, LineEnd: true, Raw: []byte(c.raw)})
		if ok != c.ok || got != c.want {
			t.Errorf("LogLine(%q) = %+v, %v; want %+v, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
	// A piece of a long line is no log line, nor is a framing line.
	for _, e := range []Event{
		{Kind: KindOutput, LineStart: true, LineEnd: false, Raw: []byte("    x_test.go:12: m")},
		{Kind: KindOutput, LineStart: false, LineEnd: true, Raw: []byte("    x_test.go:12: m\n")},
		{Kind: KindRun, LineStart: true, LineEnd: true, Raw: []byte("    x_test.go:12: m\n")},
	} {
		if got, ok := LogLine(&e); ok {
			t.Errorf("LogLine(%+v) = %+v, want none", e, got)
		}
	}
}
