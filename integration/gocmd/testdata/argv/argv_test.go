// Package argv is the fixture of the differential argv test: a package
// with flags of its own and checks of its positional arguments, run by
// hand with many argument forms, bare and under nettrap. It makes no
// network calls unless given -dial.
package argv

import (
	"flag"
	"fmt"
	"slices"
	"testing"

	"example.com/fixtures/fx"
)

var (
	update = flag.Bool("update", false, "a custom bool flag, as golden-file tests have")
	name   = flag.String("name", "", "a custom string flag")
	level  = flag.Int("level", 0, "a custom int flag")
	dial   = flag.Bool("dial", false, "TestDial makes an attempt (to be denied)")
	marked = flag.Bool("marked", false, "TestMarked carries the marker and makes no attempt")
)

func TestPass(t *testing.T) { t.Log("passing") }

func TestFail(t *testing.T) { t.Error("failing on purpose") }

func TestSkip(t *testing.T) { t.Skip("skipping on purpose") }

// TestFlags is skipped without the custom flags, passes with exactly
// -update -name "x y", and fails with any other combination.
func TestFlags(t *testing.T) {
	if !*update && *name == "" && *level == 0 {
		t.Skip("no custom flags")
	}
	t.Logf("update=%v name=%q level=%d", *update, *name, *level)
	if !*update || *name != "x y" {
		t.Errorf("want -update -name \"x y\", got update=%v name=%q", *update, *name)
	}
}

// TestArgs is skipped without positional arguments, passes with exactly
// pos1 pos2 and fails with anything else.
func TestArgs(t *testing.T) {
	if flag.NArg() == 0 {
		t.Skip("no positional arguments")
	}
	t.Logf("args=%q", flag.Args())
	if !slices.Equal(flag.Args(), []string{"pos1", "pos2"}) {
		t.Errorf("positional arguments %q, want [pos1 pos2]", flag.Args())
	}
}

// TestLevel fails unless -level is positive: it passes only when asked.
func TestLevel(t *testing.T) {
	if *level <= 0 {
		t.Errorf("-level=%d, want a positive level", *level)
	}
}

func TestSub(t *testing.T) {
	t.Attr("kind", "parent")
	t.Run("a", func(t *testing.T) { t.Log("sub a") })
	t.Run("b", func(t *testing.T) {
		t.Run("deep", func(t *testing.T) { t.Log("deep") })
	})
	t.Run("c", func(t *testing.T) {
		if *name == "fail-sub" {
			t.Error("asked to fail")
		}
	})
}

// TestParallel logs nothing in its parallel subtests: with -v, a log line
// gets a === NAME line or not depending on how they interleave.
func TestParallel(t *testing.T) {
	for _, n := range []string{"p1", "p2"} {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
		})
	}
}

func BenchmarkSmall(b *testing.B) {
	for b.Loop() {
		_ = fmt.Sprint(1)
	}
}

func Example_hello() {
	fmt.Println("hello")
	// Output: hello
}

// TestDial connects to the sandbox's external host, for the audit record
// of a denial.
func TestDial(t *testing.T) {
	if !*dial {
		t.Skip("no -dial")
	}
	if err := fx.Dial(fx.External, 1201, t.Name()); err != nil {
		t.Log(err)
	}
}

// TestMarked is marked and makes no attempt: a stale marker.
func TestMarked(t *testing.T) {
	if !*marked {
		t.Skip("no -marked")
	}
	t.Attr("nettrap", "network")
}
