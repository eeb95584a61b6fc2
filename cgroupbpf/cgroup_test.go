package cgroupbpf

import "testing"

func TestMadeBy(t *testing.T) {
	for _, c := range []struct {
		name, prefix string
		pid          int
		ok           bool
	}{
		{"nettrap-1234-2", "nettrap", 1234, true},
		{"nettrap-probe-1234-1", "nettrap-probe", 1234, true},
		{"nettrap-probe-1234-1", "nettrap", 0, false},
		{"nettrap-1234", "nettrap", 0, false},
		{"nettrap-12x4-2", "nettrap", 0, false},
		{"nettrap-0-2", "nettrap", 0, false},
		{"nettrap--2", "nettrap", 0, false},
		{"kfloor-1234-2", "nettrap", 0, false},
		{"system.slice", "nettrap", 0, false},
	} {
		pid, ok := madeBy(c.name, c.prefix)
		if pid != c.pid || ok != c.ok {
			t.Errorf("madeBy(%q, %q) = %d, %v; want %d, %v", c.name, c.prefix, pid, ok, c.pid, c.ok)
		}
	}
}
