package run

import (
	"testing"

	"github.com/nettrap/nettrap/gotest"

	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

func TestWithGodebug(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "nettrapcfg=h",
		"http2client=0":                   "http2client=0,nettrapcfg=h",
		"nettrapcfg=old,x=1":              "x=1,nettrapcfg=h",
		"x=1,nettrapcfg=old,,y=2":         "x=1,y=2,nettrapcfg=h",
		"x=1, nettrapcfg=old":             "x=1,nettrapcfg=h",
		"nettrapcfgx=1":                   "nettrapcfgx=1,nettrapcfg=h",
		"panicnil=1,http2server=0,tls=10": "panicnil=1,http2server=0,tls=10,nettrapcfg=h",
	} {
		if got := withGodebug(in, "h"); got != want {
			t.Errorf("withGodebug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCacheConfig: every setting a verdict depends on changes the hash;
// the same settings give the same hash.
func TestCacheConfig(t *testing.T) {
	base := func() Options {
		return Options{ResolvConf: "/nonexistent/resolv.conf"}
	}
	rule, err := policy.ParseRule("192.0.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]func(*Options){
		"mode":        func(o *Options) { o.Policy.Mode = policy.Audit },
		"rules":       func(o *Options) { o.Policy.Rules = []policy.Rule{rule} },
		"errno":       func(o *Options) { o.Policy.Errno = 13 },
		"sealed":      func(o *Options) { o.Policy.Sealed = true },
		"unspecified": func(o *Options) { o.Policy.AllowUnspecified = true },
		"allow-test":  func(o *Options) { o.AllowTests = []gotest.TestRule{gotest.MustParseTestRule("^TestX$")} },
		"emulate":     func(o *Options) { o.Emulate = supervisor.EmulateOn },
		"resolv-conf": func(o *Options) { o.ResolvConf = "/etc/hostname" },
	}
	h0, err := cacheConfig(base())
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := cacheConfig(base()); again != h0 {
		t.Errorf("the same settings hash to %s and %s", h0, again)
	}
	seen := map[string]string{h0: "base"}
	for name, change := range variants {
		o := base()
		change(&o)
		h, err := cacheConfig(o)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s hashes like %s: %s", name, prev, h)
		}
		seen[h] = name
	}
}
