package emulate

import (
	"errors"
	"testing"
)

// parseProcSelf reads a name as the kernel walks it: what goes through
// the caller's /proc/self (or thread-self), and whether it is fd/N with
// a relative rest.
func TestParseProcSelf(t *testing.T) {
	for _, tc := range []struct {
		path    string
		through bool
		bad     bool
		want    procSelf
	}{
		{path: "/tmp/s.sock"},
		{path: "s.sock"},
		{path: "proc/self/fd/3"}, // relative: from the caller's working directory
		{path: "/proc/selfish/fd/3"},
		{path: "/proc/42/fd/3"},
		{path: "/proc/self/fd/3", through: true, want: procSelf{fd: 3}},
		{path: "//proc/./self//fd/3", through: true, want: procSelf{fd: 3}},
		{path: "/proc/thread-self/fd/12", through: true, want: procSelf{thread: true, fd: 12}},
		{path: "/proc/self/fd/5/a/b.sock", through: true, want: procSelf{fd: 5, rest: "a/b.sock"}},
		{path: "/proc/self/fd/5/../x", through: true, want: procSelf{fd: 5, rest: "../x"}},
		{path: "/proc/self/fd/5/", through: true, want: procSelf{fd: 5, rest: "."}},
		{path: "/proc/self/fd/5/.", through: true, want: procSelf{fd: 5, rest: "."}},
		{path: "/proc/self/fd/5//x/.", through: true, want: procSelf{fd: 5, rest: "x/."}},
		{path: "/proc/self/fd/./5/x", through: true, want: procSelf{fd: 5, rest: "x"}},
		{path: "/proc/self/fd/05", through: true, bad: true},
		{path: "/proc/self/fd/-1", through: true, bad: true},
		{path: "/proc/self/fd/99999999999", through: true, bad: true},
		{path: "/proc/self/fd", through: true, bad: true},
		{path: "/proc/self/cwd/s.sock", through: true, bad: true},
		{path: "/proc/self/root/tmp/s.sock", through: true, bad: true},
		{path: "/proc/self/../self/fd/3", through: true, bad: true},
		{path: "/proc/self", through: true, bad: true},
	} {
		got, through, err := parseProcSelf(tc.path)
		if through != tc.through || (err != nil) != tc.bad || (err != nil && !errors.Is(err, errProcSelf)) {
			t.Errorf("%q: through %v, err %v; want through %v, bad %v", tc.path, through, err, tc.through, tc.bad)
			continue
		}
		if !tc.bad && got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.path, got, tc.want)
		}
	}
}
