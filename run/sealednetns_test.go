package run

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// TestSealedNetnsWhen: only a sealed, enforcing run of a kind that starts
// the supervisor, with --sealed-netns=auto, gets a namespace; the others
// get none and say nothing.
func TestSealedNetnsWhen(t *testing.T) {
	sealed := Options{Kind: Command, Policy: policy.Policy{Sealed: true}, SealedNetns: true}
	for _, c := range []struct {
		name string
		edit func(o *Options)
	}{
		{"not sealed", func(o *Options) { o.Policy.Sealed = false }},
		{"audit mode", func(o *Options) { o.Policy.Mode = policy.Audit }},
		{"--sealed-netns=off", func(o *Options) { o.SealedNetns = false }},
		{"inner test binary", func(o *Options) { o.Kind = InnerTestBinary }},
		{"inner go test", func(o *Options) { o.Kind = InnerGoTest }},
		{"inner command", func(o *Options) { o.Kind = InnerCommand }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := sealed
			c.edit(&o)
			var notices bytes.Buffer
			if ns := sealedNetns(o, &notices); ns != nil {
				ns.Close()
				t.Errorf("a namespace for %+v", o)
			}
			if notices.Len() != 0 {
				t.Errorf("said %q", notices.String())
			}
		})
	}
	t.Run("sealed command", func(t *testing.T) {
		var notices bytes.Buffer
		ns := sealedNetns(sealed, &notices)
		if ns == nil {
			// Where none can be made, that is said, once.
			if n := strings.Count(notices.String(), "nettrap: --sealed without a network namespace of the command's own ("); n != 1 {
				t.Errorf("no namespace, and said %q", notices.String())
			}
			c, err := supervisor.ChooseEngine(supervisor.EngineAuto)
			if err == nil && c.Engine == supervisor.EngineNotify && os.Geteuid() == 0 && os.Getenv("CI") == "true" {
				t.Fatalf("no namespace as root with the notify engine under CI=true: %s", notices.String())
			}
			return
		}
		defer ns.Close()
		if notices.Len() != 0 {
			t.Errorf("a namespace, and said %q", notices.String())
		}
		if _, err := NewSealedNetns(supervisor.EngineAuto, supervisor.UsernsOff); err == nil || !strings.Contains(err.Error(), "--userns=off") {
			t.Errorf("--userns=off: %v, want refused naming it", err)
		}
	})
}
