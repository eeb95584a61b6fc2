package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/nettrap/nettrap/run"
)

// InnerEnv is the environment of the nettraps a run starts (through go
// test -exec, or inside a command run): the run's flags as NETTRAP_*
// variables, and what the run tells them (run.Names).
func (cfg *config) InnerEnv(env []string, in run.Inner) []string {
	set := map[string]string{
		envName("mode"):         cfg.raw.mode,
		envName("errno"):        cfg.raw.errno,
		envName("allow"):        strings.Join(cfg.raw.allow, ","),
		envName("allow-test"):   strings.Join(cfg.raw.allowTests, "\n"),
		envName("allow-unix"):   strings.Join(cfg.raw.allowUnix, ","),
		envName("audit-log"):    in.AuditLog,
		envName("resolv-conf"):  in.ResolvConf,
		envName("run-id"):       in.RunID,
		envName("sealed"):       sealedEnv(cfg.sealed),
		envName("emulate"):      cfg.raw.emulate,
		envName("engine"):       cmp.Or(in.Engine, cfg.raw.engine),
		envName("userns"):       cfg.raw.userns,
		envName("sealed-netns"): cfg.raw.sealedNetns,
		envName("inner"):        cmp.Or(in.RunDir, "1"),
		envName("hub"):          in.Hub,
	}
	if cfg.allowUnspecified {
		set[envName("allow-unspecified")] = "1"
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; ours {
			continue
		}
		// The inners take these from the outer's config or not at all:
		// the summary is the outer's; generic is what the outer decided.
		switch k {
		case envName("generic"), envName("allow-unspecified"), envName("summary"), envName("resolv-conf"):
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// sealedEnv is NETTRAP_SEALED for the inner nettraps: set or absent, never
// inherited from elsewhere.
func sealedEnv(sealed bool) string {
	if sealed {
		return "1"
	}
	return ""
}

// testSwitchPrefix starts the test-only switches the supervisor reads
// (NETTRAP_TEST_NO_SYNC_WAKEUP, NETTRAP_TEST_NO_KILLABLE_RECV, …; the
// benchmarks set them): not settings, and not typos.
const testSwitchPrefix = "NETTRAP_TEST_"

// unknownVarWarnings warns about NETTRAP_* variables that nettrap does not
// read: a misspelled one would otherwise be ignored without a word.
func unknownVarWarnings(environ []string) []string {
	var known []string
	for _, s := range settings {
		if s.env != "" {
			known = append(known, s.env)
		}
	}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "NETTRAP_") || slices.Contains(known, k) || strings.HasPrefix(k, testSwitchPrefix) {
			continue
		}
		msg := "unknown variable " + k
		if near := nearest(k, known); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		out = append(out, msg)
	}
	return out
}

// nearest is the known name closest to name, if it is a likely typo
// (at most 2 edits, or one is a prefix of the other).
func nearest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(name, k)
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	for _, k := range known {
		if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) {
			return k
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
