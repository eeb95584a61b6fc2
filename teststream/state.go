package teststream

import (
	"slices"
	"strings"
)

// State is the life-cycle state of a test.
type State int

// States of a test.
const (
	Running State = iota // started (=== RUN or === CONT) and not finished
	Paused               // called t.Parallel and waits for its parent (=== PAUSE)
	Done                 // finished (--- PASS/FAIL/SKIP, or implied)
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Paused:
		return "paused"
	case Done:
		return "done"
	}
	return "unknown"
}

// TestInfo describes one test as seen in the stream.
type TestInfo struct {
	Name    string
	Parent  string // "" for a top-level test
	State   State
	Result  string // PASS, FAIL, SKIP, BENCH once Done (empty if implied)
	Elapsed string // as printed, e.g. "0.01s"
	Attrs   map[string]string
}

type test struct {
	name, parent string
	state        State
	result       string
	elapsed      string
	attrs        map[string]string
	bench        bool // a benchmark: never prints --- PASS, its end is implied
}

// tree is the state of all tests. It is guarded by Parser.mu.
type tree struct {
	tests   map[string]*test
	active  []*test // not Done, in start order
	current string  // test that unframed output is attributed to
	started bool    // a test has been started
	final   string  // PASS or FAIL once the binary printed it
}

func newTree() tree { return tree{tests: make(map[string]*test)} }

// parentOf returns the innermost active test of which name is a subtest.
// Subtest names may themselves contain '/', so the longest active prefix
// wins rather than the text before the last '/'.
func (tr *tree) parentOf(name string) string {
	best := ""
	for _, t := range tr.active {
		if len(t.name) > len(best) && isDescendant(name, t.name) {
			best = t.name
		}
	}
	return best
}

func isDescendant(name, ancestor string) bool {
	return len(name) > len(ancestor) && strings.HasPrefix(name, ancestor) && name[len(ancestor)] == '/'
}

func (tr *tree) run(name string) *test {
	// Benchmarks never report their end; a new benchmark (or test) that is
	// not one of their subtests means they are over.
	tr.endBenchmarks(func(b *test) bool { return !isDescendant(name, b.name) })
	t := &test{name: name, parent: tr.parentOf(name), state: Running}
	if t.parent == "" {
		t.bench = strings.HasPrefix(name, "Benchmark")
	} else if p := tr.tests[t.parent]; p != nil {
		t.bench = p.bench
	}
	tr.tests[name] = t
	tr.active = append(tr.active, t)
	tr.started = true
	tr.current = name
	return t
}

func (tr *tree) setState(name string, s State) {
	if t := tr.tests[name]; t != nil && t.state != Done {
		t.state = s
	}
	tr.current = name
}

func (tr *tree) attr(name, key, value string) {
	t := tr.tests[name]
	if t == nil {
		t = &test{name: name, parent: tr.parentOf(name), state: Done}
		tr.tests[name] = t
	}
	if t.attrs == nil {
		t.attrs = make(map[string]string)
	}
	t.attrs[key] = value
	tr.current = name
}

// name handles === NAME. An empty name follows every finished top-level
// test, example and leaf benchmark; for benchmarks it is the only sign
// that they have ended.
func (tr *tree) name(name string) {
	tr.current = name
	if name == "" {
		tr.endBenchmarks(func(b *test) bool { return !tr.hasActiveChild(b.name) })
	}
}

// end handles a --- line and returns the name of the test it ends as
// recorded (benchmark results carry a -GOMAXPROCS suffix) and its parent.
func (tr *tree) end(name, result, elapsed string) (string, string) {
	t := tr.tests[name]
	if t == nil {
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			t = tr.tests[name[:i]]
		}
	}
	tr.current = name
	if t == nil {
		return name, ""
	}
	t.result, t.elapsed = result, elapsed
	tr.finish(func(o *test) bool { return o == t || isDescendant(o.name, t.name) })
	return t.name, t.parent
}

func (tr *tree) endBenchmarks(match func(*test) bool) {
	tr.finish(func(t *test) bool { return t.bench && match(t) })
}

func (tr *tree) finish(match func(*test) bool) {
	tr.active = slices.DeleteFunc(tr.active, func(t *test) bool {
		if match(t) {
			t.state = Done
			return true
		}
		return false
	})
}

func (tr *tree) finalLine(result string) {
	tr.final = result
	tr.current = ""
	tr.finish(func(*test) bool { return true })
}

func (tr *tree) hasActiveChild(name string) bool {
	for _, t := range tr.active {
		if isDescendant(t.name, name) {
			return true
		}
	}
	return false
}

func (tr *tree) hasRunningDescendant(name string) bool {
	for _, t := range tr.active {
		if t.state == Running && isDescendant(t.name, name) {
			return true
		}
	}
	return false
}

// leaves returns the running tests without a running descendant.
func (tr *tree) leaves() []string {
	var out []string
	for _, t := range tr.active {
		if t.state == Running && !tr.hasRunningDescendant(t.name) {
			out = append(out, t.name)
		}
	}
	return out
}

func (tr *tree) info(name string) (TestInfo, bool) {
	t := tr.tests[name]
	if t == nil {
		return TestInfo{}, false
	}
	ti := TestInfo{Name: t.name, Parent: t.parent, State: t.state, Result: t.result, Elapsed: t.elapsed}
	if len(t.attrs) > 0 {
		ti.Attrs = make(map[string]string, len(t.attrs))
		for k, v := range t.attrs {
			ti.Attrs[k] = v
		}
	}
	return ti, true
}

// marked reports whether name or one of its ancestors has attribute
// key=value. The chain is walked through the recorded parents, so a name
// that contains '/' inside one t.Run argument is handled.
func (tr *tree) marked(name, key, value string) bool {
	for depth := 0; name != "" && depth < 1000; depth++ {
		t := tr.tests[name]
		if t == nil {
			return false
		}
		if v, ok := t.attrs[key]; ok && v == value {
			return true
		}
		name = t.parent
	}
	return false
}
