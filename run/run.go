package run

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/nettrap/nettrap/gotest"

	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// Kind is what a run is, chosen by the CLI from the command and the
// environment.
type Kind int

const (
	// Command is any command, confined as a whole; a hub lets the go
	// test runs inside it name their tests (see hub).
	Command Kind = iota
	// Generic is any command with no attribution at all (--generic).
	Generic
	// TestBinary is a Go test binary, confined, named by its test2json
	// stream (see gotest).
	TestBinary
	// GoTest is `go test`: with Options.Cache the go command runs
	// confined, and every test binary it starts is wrapped by an inner
	// nettrap (gocache.go); without, the go command runs unconfined and
	// every test binary under an inner nettrap (go test -exec).
	GoTest
	// InnerCommand, InnerGoTest and InnerTestBinary run inside an outer
	// nettrap's confined tree (Options.Hub): nothing more is confined;
	// go test gets -exec, a test binary's tests are named to the outer.
	InnerCommand
	InnerGoTest
	InnerTestBinary
)

// Options are a run's settings, checked by the CLI.
type Options struct {
	Kind Kind
	// Argv is the command. Package is the tested package of a test
	// binary (TestBinary, InnerTestBinary).
	Argv    []string
	Package string

	Policy     policy.Policy
	AllowTests []gotest.TestRule // --allow-test
	Emulate    supervisor.EmulateMode
	Engine     supervisor.EngineMode // --engine
	Userns     supervisor.UsernsMode // --userns
	// SealedNetns: under --sealed, run the command in a network
	// namespace of its own where one can be made (--sealed-netns=auto;
	// sealednetns.go).
	SealedNetns bool
	AuditLog    string // "" for none (a temporary one where a summary needs it)
	ResolvConf  string
	// ResolvConfGiven: the user named ResolvConf, which is then handed
	// down to the nettraps the run starts.
	ResolvConfGiven bool
	RunID           string // "" for a new random one
	Summary         string // stderr, off or a file

	// Hub is the socket of the outer nettrap (Inner kinds).
	Hub string
	// OuterRun is what an outer nettrap told this one (Inner.RunDir, or
	// "1"); "" when no nettrap started this one.
	OuterRun string

	// Cache (GoTest): keep Go's test cache (gocache.go) rather than
	// run the test binaries through go test -exec.
	Cache bool

	Names Names
}

// Names are the CLI's spelling of settings, keyed by flag name
// ("audit-log"); "hub" is the variable of Options.Hub.
type Names interface {
	// Source names what set a setting: "--audit-log", or
	// "NETTRAP_AUDIT_LOG" when the variable did.
	Source(key string) string
	// Var is the variable of a setting.
	Var(key string) string
	// InnerEnv is environ with the run's settings, and in, as the
	// variables an inner nettrap reads.
	InnerEnv(environ []string, in Inner) []string
}

// Inner is what a run tells the nettraps it starts, beyond its settings.
type Inner struct {
	AuditLog   string // the run's log, absolute
	RunDir     string // the run's directory, where inners mark that they ran a test binary; "" for none
	ResolvConf string // absolute; "" for the default
	RunID      string
	Hub        string // the hub's socket; "" for none
	// Engine is the engine the run chose for nettraps that start a
	// supervisor of their own (go test -exec): "" to hand --engine down
	// as given.
	Engine string
}

// Run runs the command and returns nil when it exited 0, else an
// *ExitError with the status to exit with.
func Run(o Options) error {
	if o.OuterRun != "" {
		if err := dieWithGoCommand(); err != nil {
			return err
		}
	}
	if o.RunID == "" {
		o.RunID = newRunID()
		if id := goCommandRunID(o); id != "" {
			o.RunID = id
		}
	}
	switch o.Kind {
	case InnerCommand, InnerGoTest, InnerTestBinary:
		return runInner(o)
	case GoTest:
		if o.Cache {
			return runGoTestCached(o)
		}
		return runGoTest(o)
	}
	if o.Kind == Command && o.Cache {
		// The cache key needs it soon (makecache.go).
		go selfHash()
	}
	return runConfined(o)
}

func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
