package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/policy"
)

// Row is one line of a summary table: the records with the same package,
// test, operation, destination, class and decision, counted.
type Row struct {
	Package    string         `json:"package,omitempty"`
	Test       string         `json:"test,omitempty"`
	Candidates []string       `json:"candidates,omitempty"`
	Process    string         `json:"process,omitempty"` // argv[0], for records outside Go tests
	Operation  string         `json:"operation,omitempty"`
	Dest       string         `json:"destination,omitempty"`
	Class      string         `json:"class,omitempty"`
	Decision   audit.Decision `json:"decision"`
	Reason     string         `json:"reason,omitempty"`
	Marker     string         `json:"marker_value,omitempty"` // a bad marker's value
	Rule       string         `json:"allow_test,omitempty"`   // an unused --allow-test rule
	// Count counts the attempts; a DNS lookup row (Queries) is one
	// attempt, whatever queries the resolver made.
	Count int `json:"count"`
	// Queries, of a DNS lookup row (Operation "DNS lookup NAME"), counts
	// the queries nettrap's sinkhole read for the name in the row's
	// test and place: A and AAAA, at each nameserver (Dest lists them),
	// tried again; each is a record of the audit log. 0 for other rows.
	Queries int `json:"queries,omitempty"`
	// Where is where the attempts were made, from the caller's stack
	// (audit.Record.Where): "prices/client.go:31 (prices.fetchQuote)",
	// with File (relative to the module's root when known) and Line;
	// Path is the file as the binary names it (absolute unless built
	// with -trimpath), from the record's stack. Empty without a stack.
	Where string `json:"where,omitempty"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
	Path  string `json:"path,omitempty"`
	// CalledFile, CalledLine and CalledPath are the test's own frame the
	// attempts came through when Where is a helper's
	// (audit.Origin.CalledFrom), as File, Line and Path are Where's.
	CalledFile string `json:"called_from_file,omitempty"`
	CalledLine int    `json:"called_from_line,omitempty"`
	CalledPath string `json:"called_from_path,omitempty"`
	// StartedBy is the test whose goroutine made the attempts, by the
	// stack, when that is not Test (audit.Record.StartedBy): the row is
	// that test's.
	StartedBy string `json:"started_by,omitempty"`
	// Unowned: the stack tied the attempts to no running test
	// (audit.Record.Unowned): the row is the package's.
	Unowned bool `json:"unowned,omitempty"`
	// Stack is the whole stack of the row's first attempt, innermost
	// first (audit.Record.Stack): a line in the test output shows only
	// the module's frames of it; Summary.Stacks prints it whole.
	Stack []audit.Frame `json:"stack,omitempty"`
}

// Who names the origin of the row's attempts: the test, the candidates of
// an ambiguous attempt, collection time, or the process; for a
// goroutine of another test, that test first: "TestA (its goroutine,
// during TestB)"; for a goroutine the stack tied to no running test,
// the package: "(package, during TestB)".
func (r Row) Who() string {
	if r.StartedBy != "" {
		during := r.Running()
		if r.Test != audit.Collection {
			during = "during " + during
		} else {
			during = "at collection time"
		}
		return r.StartedBy + " (its goroutine, " + during + ")"
	}
	if r.Unowned {
		return "(package, during " + r.Running() + ")"
	}
	return r.Running()
}

// Running names who was running when the attempts were made: Who
// without StartedBy.
func (r Row) Running() string {
	switch {
	case len(r.Candidates) > 0:
		return "one of " + strings.Join(r.Candidates, ", ")
	case r.Test == audit.Collection:
		return "(collection)"
	case r.Test != "":
		return r.Test
	case r.Process != "":
		return "process " + r.Process
	}
	return "-"
}

// Totals count attempts (not rows).
type Totals struct {
	Blocked    int `json:"blocked"`                     // denied in a test (or a process)
	Collection int `json:"collection"`                  // denied at collection time
	WouldBlock int `json:"would_block"`                 // --mode=audit: what enforce would deny
	Allowed    int `json:"allowed"`                     // by a marker, an --allow rule, or in the tests' own namespaces
	OwnNetns   int `json:"allowed_own_netns,omitempty"` // of Allowed: in network namespaces the tests made
	Toolchain  int `json:"allowed_toolchain,omitempty"` // of Allowed: the go command's own calls
	Stale      int `json:"stale_markers"`
	BadMarkers int `json:"bad_markers"`
	// UnusedRules counts the --allow-test rules that named no test with
	// a network attempt in the run.
	UnusedRules int `json:"unused_rules"`
	Errors      int `json:"nettrap_errors"`
	Packages    int `json:"packages_with_findings"`
	// BlockedPackages counts the packages with blocked attempts (in tests
	// or at collection time): the headline's "blocked in N packages" must
	// not count a package whose only findings are markers or errors.
	BlockedPackages int `json:"packages_blocked"`
}

// Summary is what a run (or several merged logs) found.
type Summary struct {
	RunIDs      []string `json:"run_ids"`
	Logs        []string `json:"audit_logs,omitempty"`
	Blocked     []Row    `json:"blocked"`
	Collection  []Row    `json:"collection"`
	WouldBlock  []Row    `json:"would_block"`
	Allowed     []Row    `json:"allowed"`
	Stale       []Row    `json:"stale_markers"`
	BadMarkers  []Row    `json:"bad_markers"`
	UnusedRules []Row    `json:"unused_rules"`
	Errors      []Row    `json:"nettrap_errors"`
	Totals      Totals   `json:"totals"`
	// Scope is the package the summary is about when it is one
	// package's part of a run (go test -exec: each package's nettrap
	// reports its own); the Markdown heading names it.
	Scope string `json:"-"`
}

// Clean reports whether nothing was blocked or would have been, no marker
// is stale and nettrap had no trouble: the one-line case.
func (s *Summary) Clean() bool {
	t := s.Totals
	return t.Blocked+t.Collection+t.WouldBlock+t.Stale+t.BadMarkers+t.UnusedRules+t.Errors == 0
}

// Fails reports whether the summary holds what fails a run: a blocked
// attempt (in a test or at collection time), a bad marker, or nettrap's
// own error. Would-be blocks (--mode=audit), stale markers and unused
// rules fail nothing.
func (s *Summary) Fails() bool {
	t := s.Totals
	return t.Blocked+t.Collection+t.BadMarkers+t.Errors > 0
}

// Build groups records into a summary. runID, when not empty, keeps only
// that run's records (a log given with --audit-log may hold older runs).
func Build(recs []audit.Record, runID string) *Summary {
	s := &Summary{RunIDs: []string{}, Blocked: []Row{}, Collection: []Row{}, WouldBlock: []Row{},
		Allowed: []Row{}, Stale: []Row{}, BadMarkers: []Row{}, UnusedRules: []Row{}, Errors: []Row{}}
	groups := map[string]*Row{}
	var order []*Row
	runs := map[string]bool{}
	pkgs := map[string]bool{}
	blockedPkgs := map[string]bool{}
	var kept []audit.Record
	for _, rec := range recs {
		if runID != "" && rec.RunID != runID {
			continue
		}
		kept = append(kept, rec)
		if rec.RunID != "" && !runs[rec.RunID] {
			runs[rec.RunID] = true
			s.RunIDs = append(s.RunIDs, rec.RunID)
		}
		if rec.Left {
			// A call its caller left before it was judged (a signal):
			// the kernel made it again, and that record is the one
			// counted. The log keeps both.
			continue
		}
		row := rowOf(rec)
		key := rowKey(row)
		if g := groups[key]; g != nil {
			g.merge(row)
			continue
		}
		row.Count = 1
		groups[key] = &row
		order = append(order, &row)
	}
	for _, r := range order {
		s.add(*r, pkgs, blockedPkgs)
	}
	s.Totals.Packages = len(pkgs)
	s.Totals.BlockedPackages = len(blockedPkgs)
	for _, rows := range []*[]Row{&s.Blocked, &s.Collection, &s.WouldBlock, &s.Allowed, &s.Stale, &s.BadMarkers, &s.UnusedRules, &s.Errors} {
		slices.SortStableFunc(*rows, compareRows)
	}
	slices.Sort(s.RunIDs)
	return s
}

// rowKey tells the rows that are one: every field a row shows, but a
// lookup's nameservers (one lookup asks each of them: one row per name
// per test and place).
func rowKey(r Row) string {
	dest := r.Dest
	if r.Queries > 0 {
		dest = ""
	}
	return strings.Join([]string{r.Package, r.Test, strings.Join(r.Candidates, "\x00"), r.Process,
		r.Operation, dest, r.Class, string(r.Decision), r.Reason, r.Marker, r.Rule,
		r.Where, r.Path, r.CalledFile, strconv.Itoa(r.CalledLine), r.StartedBy, strconv.FormatBool(r.Unowned)}, "\x01")
}

// merge counts another record of the row's (as a row of its own, r): one
// more attempt, or for a lookup one more query, whose nameserver the
// row's Dest lists.
func (g *Row) merge(r Row) {
	if g.Queries == 0 {
		g.Count++
		return
	}
	g.Queries++
	if r.Dest != "" && !slices.Contains(strings.Split(g.Dest, ", "), r.Dest) {
		g.Dest += ", " + r.Dest
	}
}

// DNSLookup starts the Operation of a row for DNS queries nettrap's
// sinkhole read: "DNS lookup _grpc_config.localhost" (the name: the
// queries' types are the records').
const DNSLookup = "DNS lookup "

func rowOf(rec audit.Record) Row {
	op := rec.Syscall
	if rec.SockType != "" {
		op += " " + rec.SockType
	}
	queries := 0
	if rec.Lookup != "" {
		op, queries = DNSLookup+audit.LookupName(rec.Lookup), 1
	}
	r := Row{Package: rec.Package, Test: rec.Test, Candidates: rec.Candidates, Operation: op, Queries: queries,
		Dest: rec.Dest, Class: rec.Class, Decision: rec.Decision, Reason: rec.Reason, Marker: rec.MarkerValue}
	if r.Decision == audit.UnusedRule && len(rec.AllowTest) > 0 {
		r.Rule = rec.AllowTest[0]
	}
	if r.Package == "" && r.Test == "" && r.Rule == "" {
		r.Process = rec.Argv0
	}
	if r.Decision != audit.Allowed {
		r.Stack = rec.Stack
	}
	if w := rec.Where; w != nil {
		r.Where = w.Loc() + " (" + w.ShortFunc() + ")"
		r.File, r.Line, r.StartedBy, r.Unowned = w.File, w.Line, rec.StartedBy, rec.Unowned
		r.Path = stackPath(rec.Stack, *w)
		if c := rec.CalledFrom; c != nil {
			r.CalledFile, r.CalledLine, r.CalledPath = c.File, c.Line, stackPath(rec.Stack, *c)
		}
	}
	if r.Decision == audit.Denied || r.Decision == audit.WouldDeny {
		// Denials of one destination differ only by detail; keep the
		// reason for rows without a destination (raw sockets, io_uring).
		if r.Dest != "" {
			r.Reason = ""
		}
	}
	return r
}

// stackPath is the file of frame f as the binary names it, from the
// stack (audit.Origin's frames have it relative to the module's root):
// "" when the stack does not have f.
func stackPath(stack []audit.Frame, f audit.Frame) string {
	for _, s := range stack {
		if s.Func == f.Func && s.Line == f.Line {
			return s.File
		}
	}
	return ""
}

// add puts a row in its section and counts it; pkgs gathers the packages
// with findings, blockedPkgs those with blocked attempts.
func (s *Summary) add(r Row, pkgs, blockedPkgs map[string]bool) {
	rows, total := s.section(r)
	*rows = append(*rows, r)
	*total += r.Count
	if r.Decision == audit.Allowed && r.Class == classify.OwnNetns.String() {
		s.Totals.OwnNetns += r.Count
	}
	if r.Decision == audit.Allowed && r.Reason == policy.ReasonToolchain {
		s.Totals.Toolchain += r.Count
	}
	key := r.Package + "\x00" + r.Process
	if r.Decision != audit.Allowed && r.Decision != audit.UnusedRule { // a finding in a package
		pkgs[key] = true
	}
	if rows == &s.Blocked || rows == &s.Collection {
		blockedPkgs[key] = true
	}
}

// section is the list a row goes in and the total it counts towards.
func (s *Summary) section(r Row) (*[]Row, *int) {
	switch {
	case r.Decision == audit.StaleMarker:
		return &s.Stale, &s.Totals.Stale
	case r.Decision == audit.BadMarker:
		return &s.BadMarkers, &s.Totals.BadMarkers
	case r.Decision == audit.UnusedRule:
		return &s.UnusedRules, &s.Totals.UnusedRules
	case r.Decision == audit.NettrapError:
		return &s.Errors, &s.Totals.Errors
	case r.Decision == audit.Allowed:
		return &s.Allowed, &s.Totals.Allowed
	case r.Decision == audit.WouldDeny:
		return &s.WouldBlock, &s.Totals.WouldBlock
	case r.Test == audit.Collection:
		return &s.Collection, &s.Totals.Collection
	default:
		return &s.Blocked, &s.Totals.Blocked
	}
}

func compareRows(a, b Row) int {
	return cmp.Or(
		cmp.Compare(a.Package, b.Package),
		cmp.Compare(a.Process, b.Process),
		cmp.Compare(a.Who(), b.Who()),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Dest, b.Dest),
		cmp.Compare(a.Class, b.Class),
	)
}

// finding: the decision is a record about tests or rules, not an attempt.
func finding(d audit.Decision) bool {
	switch d {
	case audit.StaleMarker, audit.BadMarker, audit.UnusedRule, audit.NettrapError:
		return true
	}
	return false
}
