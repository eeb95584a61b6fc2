package ancestry

import (
	"debug/dwarf"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayoutMatchesSymbols checks what Open reads of a stripped binary
// against what the same binary says with its symbols and DWARF kept
// (go build keeps both): allgs's address, found in forEachG's code, on
// amd64 and arm64, and runtime.g's field offsets.
func TestLayoutMatchesSymbols(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			checkLayout(t, buildFixture(t, "local", arch))
		})
	}
}

// goVersions are the Go releases whose runtime the tests read: the
// latest patch of each since 1.21, the first to record a goroutine's
// creator. The toolchains come from the Go module proxy (GOTOOLCHAIN).
var goVersions = []string{"go1.21.13", "go1.22.12", "go1.23.12", "go1.24.13", "go1.25.14", "go1.26.11"}

// TestEveryGoVersion: for a program each Go release built, the layout
// read from its type descriptors and code is what its symbols and DWARF
// say, and a goroutine's chain is read from the running program: its
// creators exited, known with tracebackancestors, not without.
func TestEveryGoVersion(t *testing.T) {
	for _, v := range goVersions {
		t.Run(v, func(t *testing.T) {
			exe := buildFixture(t, v, "amd64")
			checkLayout(t, exe)
			c, _ := readChainOf(t, exe, nil, noAncestors)
			if len(c.Creators) != 0 || !strings.HasSuffix(c.End, "has exited") || !strings.HasSuffix(c.GoStatement.Func, ".creatorB") {
				t.Errorf("without ancestors: creators %+v, end %q, go statement in %q; want none, exited, creatorB", c.Creators, c.End, c.GoStatement.Func)
			}
			c, _ = readChainOf(t, exe, nil, "GODEBUG=tracebackancestors=5")
			if len(c.Creators) < 3 {
				t.Fatalf("with ancestors: creators %+v, end %q: want creatorB, creatorA, main", c.Creators, c.End)
			}
			for i, w := range []string{"creatorB", "creatorA", "main"} {
				if cr := c.Creators[i]; !cr.Saved || !strings.Contains(funcs(cr), w) {
					t.Errorf("creator %d: %s (saved %v), want the kept stack with %s", i, funcs(cr), cr.Saved, w)
				}
			}
		})
	}
}

// buildFixture builds testdata/fixture with Go release version ("local":
// the go command's own) for arch, symbols and DWARF kept.
func buildFixture(t *testing.T, version, arch string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "fixture")
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = "testdata/fixture"
	cmd.Env = append(os.Environ(), "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN="+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(string(out), "downloading") {
			t.Skipf("%s: cannot get the toolchain from the module proxy: %s", version, out)
		}
		t.Fatalf("go build with %s: %v\n%s", version, err, out)
	}
	return exe
}

// checkLayout compares what Open reads of exe with its symbols and DWARF.
func checkLayout(t *testing.T, exe string) {
	t.Helper()
	l := openLayout(t, exe)
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if want := symbol(t, ef, "runtime.allgs"); l.allgs != want {
		t.Errorf("allgs at %#x, the symbol table says %#x", l.allgs, want)
	}
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	g := members(t, d, "runtime.g")
	sched := members(t, d, "runtime.gobuf")
	for name, got := range map[string]uint64{
		"goid": l.off.goid, "parentGoid": l.off.parentGoid, "gopc": l.off.gopc,
		"startpc": l.off.startpc, "atomicstatus": l.off.status, "syscallsp": l.off.syscallSP,
		"syscallpc": l.off.syscallPC, "ancestors": l.off.ancestors,
	} {
		if got != g[name] {
			t.Errorf("g.%s at %d, DWARF says %d", name, got, g[name])
		}
	}
	for name, got := range map[string]uint64{"sp": l.off.schedSP, "pc": l.off.schedPC, "lr": l.off.schedLR, "g": l.off.schedG} {
		if want := g["sched"] + sched[name]; got != want {
			t.Errorf("g.sched.%s at %d, DWARF says %d", name, got, want)
		}
	}
}

// symbol returns the value of the symbol named name.
func symbol(t *testing.T, ef *elf.File, name string) uint64 {
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("no symbol %s", name)
	return 0
}

// members returns the offsets of the fields of the struct type named
// name, from DWARF.
func members(t *testing.T, d *dwarf.Data, name string) map[string]uint64 {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			t.Fatalf("no type %s in DWARF (%v)", name, err)
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != name {
			continue
		}
		typ, err := d.Type(e.Offset)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		for _, f := range typ.(*dwarf.StructType).Field {
			m[f.Name] = uint64(f.ByteOffset)
		}
		return m
	}
}
