package callstack

import "testing"

func TestFuncPackage(t *testing.T) {
	for _, c := range []struct{ name, pkg, short string }{
		{"example.com/m/pkg.F", "example.com/m/pkg", "pkg.F"},
		{"example.com/m/pkg.(*T).M", "example.com/m/pkg", "pkg.(*T).M"},
		{"example.com/m/pkg.TestA.func1.2", "example.com/m/pkg", "pkg.TestA.func1.2"},
		{"example.com/m/pkg.G[...]", "example.com/m/pkg", "pkg.G[...]"},
		{"example.com/m/pkg.G[go.shape.*example.com/m/x.T]", "example.com/m/pkg", "pkg.G[go.shape.*example.com/m/x.T]"},
		{"example.com/m.v2/pkg.F", "example.com/m.v2/pkg", "pkg.F"},
		{"gopkg.in/yaml%2ev3.Unmarshal", "gopkg.in/yaml.v3", "yaml.v3.Unmarshal"},
		{"example.com/a%2eb/c%2ed.(*T).M", "example.com/a.b/c.d", "c.d.(*T).M"},
		{"example.com/bad%2.F", "example.com/bad%2", "bad%2.F"},
		{"syscall.Read", "syscall", "syscall.Read"},
		{"internal/runtime/syscall/linux.Syscall6", "internal/runtime/syscall/linux", "linux.Syscall6"},
		{"main.main", "main", "main.main"},
		{"runtime.goexit", "runtime", "runtime.goexit"},
	} {
		if got := FuncPackage(c.name); got != c.pkg {
			t.Errorf("FuncPackage(%q) = %q, want %q", c.name, got, c.pkg)
		}
		if got := ShortName(c.name); got != c.short {
			t.Errorf("ShortName(%q) = %q, want %q", c.name, got, c.short)
		}
	}
}

func TestIsUser(t *testing.T) {
	tab := &Table{Module: "example.com/m", MainPackage: "example.com/m/cmd/app"}
	for _, c := range []struct {
		pkg, file string
		user      bool
	}{
		{"example.com/m", "/src/m/m.go", true},
		{"example.com/m/pkg", "/src/m/pkg/a.go", true},
		{"example.com/m/pkg_test", "/src/m/pkg/a_test.go", true},
		{"example.com/m/internal/x", "/src/m/internal/x/x.go", true},
		{"main", "/src/m/cmd/app/main.go", true},
		{"main", "/tmp/go-build1/b001/_testmain.go", false},
		{"example.com/m/pkg", "_cgo_gotypes.go", false}, // cgo's wrapper of a C function
		{"example.com/m/pkg", "/src/m/pkg/c.go", true},  // the user's cgo file, by its line directives
		{"example.com/mother", "/src/mother/a.go", false},
		{"example.com/m/vendor/example.com/dep", "/src/m/vendor/example.com/dep/d.go", false},
		{"example.com/dep", "/src/m/vendor/example.com/dep/d.go", false},
		{"net", "/usr/local/go/src/net/dial.go", false},
		{"runtime", "/usr/local/go/src/runtime/proc.go", false},
		{"internal/poll", "/usr/local/go/src/internal/poll/fd.go", false},
		{"vendor/golang.org/x/net/dns/dnsmessage", "/usr/local/go/src/vendor/golang.org/x/net/dns/dnsmessage/message.go", false},
	} {
		if got := tab.isUser(c.pkg, c.file); got != c.user {
			t.Errorf("isUser(%q, %q) = %v", c.pkg, c.file, got)
		}
	}
	// A module path without a dot.
	local := &Table{Module: "app"}
	if !local.isUser("app/server", "/src/app/server/s.go") || local.isUser("net/http", "/usr/local/go/src/net/http/client.go") {
		t.Error("module app")
	}
	if !(&Table{}).isUser("command-line-arguments", "/src/x_test.go") || !(&Table{}).isUser("command-line-arguments_test", "/src/x_test.go") {
		t.Error("a package built from files is not the user's")
	}
	if (&Table{}).isUser("main", "/src/m/main.go") {
		t.Error("a frame is the user's without a module")
	}
}

func TestRelFile(t *testing.T) {
	tab := &Table{Module: "example.com/m", MainPackage: "example.com/m/cmd/app"}
	for _, c := range []struct{ pkg, file, rel string }{
		{"example.com/m/pkg", "/home/u/src/m/pkg/a.go", "pkg/a.go"},
		{"example.com/m/pkg_test", "/home/u/src/m/pkg/a_test.go", "pkg/a_test.go"},
		{"example.com/m", "/home/u/src/m/m.go", "m.go"},
		{"example.com/m/pkg", "example.com/m/pkg/a.go", "pkg/a.go"}, // -trimpath
		{"main", "/home/u/src/m/cmd/app/main.go", "cmd/app/main.go"},
		{"example.com/m/pkg", "/elsewhere/a.go", ""},
	} {
		if got := tab.relFile(c.pkg, c.file); got != c.rel {
			t.Errorf("relFile(%q, %q) = %q, want %q", c.pkg, c.file, got, c.rel)
		}
	}
}

func TestEntry(t *testing.T) {
	frames := func(names ...string) *Stack {
		s := &Stack{Complete: true}
		for _, n := range names {
			s.Frames = append(s.Frames, Frame{Func: n, File: "/x.go", Line: 1})
		}
		return s
	}
	for _, c := range []struct {
		s      *Stack
		entry  string
		isTest bool
	}{
		{frames("syscall.Read", "m.helper", "m.TestA", "testing.tRunner", "testing.(*T).Run.gowrap1"), "m.TestA", true},
		{frames("syscall.Read", "m.TestA.func1", "testing.tRunner"), "m.TestA.func1", true},
		{frames("syscall.Read", "m.BenchmarkA", "testing.(*B).runN", "testing.(*B).launch"), "m.BenchmarkA", true},
		{frames("syscall.Read", "m.FuzzA.func1", "runtime.call32", "runtime.reflectcall", "reflect.Value.call", "reflect.Value.Call", "testing.(*F).Fuzz.func1", "testing.tRunner"), "m.FuzzA.func1", true},
		{frames("syscall.Read", "m.worker", "m.TestA.gowrap1"), "m.worker", false},
		{frames("syscall.Read", "m.TestA.func2"), "m.TestA.func2", false},
		{frames("syscall.Read", "main.main", "runtime.main"), "main.main", false},
		{frames("runtime.main"), "runtime.main", false},
		{&Stack{Frames: frames("syscall.Read", "m.x").Frames, Stop: "cut"}, "", false},
	} {
		e, isTest := entry(c.s)
		if e != c.entry || isTest != c.isTest {
			t.Errorf("%v: entry %q %v, want %q %v", c.s.Frames, e, isTest, c.entry, c.isTest)
		}
	}
	for name, want := range map[string]bool{"m.F.gowrap1": true, "m.F.gowrap12": true, "m.F.gowrap": false, "m.F.gowrapX": false, "m.F.func1": false} {
		if isGowrap(name) != want {
			t.Errorf("isGowrap(%q) != %v", name, want)
		}
	}
}

func TestWhereString(t *testing.T) {
	w := Where{Frame: Frame{Func: "example.com/m/pkg.(*Client).Get", File: "/src/m/pkg/client.go", Line: 42}}
	if got, want := w.String(), "client.go:42 (pkg.(*Client).Get)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	tab := &Table{Module: "example.com/m"}
	s := &Stack{Complete: true, Frames: []Frame{
		{Func: "syscall.connect", File: "/go/src/syscall/zsyscall.go", Line: 1},
		{Func: "net.(*Dialer).Dial", File: "/go/src/net/dial.go", Line: 2},
		{Func: "example.com/m/pkg.(*Client).Get", File: "/src/m/pkg/client.go", Line: 42},
		{Func: "example.com/m/pkg.TestGet", File: "/src/m/pkg/client_test.go", Line: 7},
		{Func: "testing.tRunner", File: "/go/src/testing/testing.go", Line: 3},
	}}
	w, ok := tab.Where(s)
	if !ok || w.Frame.Line != 42 || w.Package != "example.com/m/pkg" || w.RelFile != "pkg/client.go" || w.Entry != "example.com/m/pkg.TestGet" || !w.EntryIsTest {
		t.Errorf("%+v %v", w, ok)
	}
	if _, ok := (&Table{Module: "example.com/other"}).Where(s); ok {
		t.Error("a frame of another module")
	}
}

// SourceName: a test binary of a main package names the package's
// functions by its import path; the line says main.F, as Go's own
// program does. Other packages, and a program's main.F, keep their names.
func TestSourceName(t *testing.T) {
	tab := &Table{Module: "example.com/m", MainPackage: "example.com/m/tool"}
	for _, c := range []struct{ fn, want string }{
		{"example.com/m/tool.ping", "main.ping"},
		{"example.com/m/tool.(*pinger).Ping.func1", "main.(*pinger).Ping.func1"},
		{"example.com/m/tool_test.TestPing", "main_test.TestPing"},
		{"example.com/m/tool/sub.F", "example.com/m/tool/sub.F"},
		{"example.com/m/toolkit.F", "example.com/m/toolkit.F"},
		{"main.main", "main.main"},
		{"net.(*Dialer).DialContext", "net.(*Dialer).DialContext"},
	} {
		if got := tab.SourceName(c.fn); got != c.want {
			t.Errorf("SourceName(%q) = %q, want %q", c.fn, got, c.want)
		}
	}
	lib := &Table{Module: "example.com/m"} // a test binary of a library package
	if got := lib.SourceName("example.com/m/tool.ping"); got != "example.com/m/tool.ping" {
		t.Errorf("without a main package: SourceName = %q", got)
	}
}
