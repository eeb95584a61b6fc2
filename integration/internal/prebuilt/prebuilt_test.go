package prebuilt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "victim"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("unset", func(t *testing.T) {
		t.Setenv(Env, "")
		if p, used, err := Lookup("victim"); used || err != nil || p != "" {
			t.Errorf("Lookup with %s unset = %q, %v, %v; want \"\", false, nil", Env, p, used, err)
		}
	})
	t.Run("present", func(t *testing.T) {
		t.Setenv(Env, dir)
		p, used, err := Lookup("victim")
		if err != nil || !used || p != filepath.Join(dir, "victim") {
			t.Errorf("Lookup(victim) = %q, %v, %v; want %s, true, nil", p, used, err, filepath.Join(dir, "victim"))
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Setenv(Env, dir)
		p, used, err := Lookup("escape32")
		if !used || p != "" || !errors.Is(err, ErrMissing) {
			t.Fatalf("Lookup(escape32) = %q, %v, %v; want used and ErrMissing", p, used, err)
		}
		for _, want := range []string{"escape32", dir, Env} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})
	t.Run("not executable", func(t *testing.T) {
		t.Setenv(Env, dir)
		if _, used, err := Lookup("notexec"); !used || err == nil {
			t.Errorf("Lookup(notexec) = used %v, err %v; want an error", used, err)
		}
	})
}

func TestFixtures(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FixturesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FixturesDir, "seq.test"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, "")
	if d, used, err := Fixtures("seq"); used || err != nil || d != "" {
		t.Errorf("Fixtures with %s unset = %q, %v, %v; want \"\", false, nil", Env, d, used, err)
	}
	t.Setenv(Env, dir)
	if d, used, err := Fixtures("seq"); !used || err != nil || d != filepath.Join(dir, FixturesDir) {
		t.Errorf("Fixtures(seq) = %q, %v, %v; want %s", d, used, err, filepath.Join(dir, FixturesDir))
	}
	_, used, err := Fixtures("seq", "clean")
	if !used || !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "clean.test") {
		t.Errorf("Fixtures(seq, clean) = used %v, err %v; want ErrMissing naming clean.test", used, err)
	}
}
