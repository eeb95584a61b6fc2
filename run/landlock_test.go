package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/policy"
)

// TestTreeDomainNotice: --sealed without a Landlock domain says so once,
// from the outermost nettrap; the default mode and inners say nothing.
func TestTreeDomainNotice(t *testing.T) {
	t.Setenv(landlock.NoLandlockEnv, "1")
	for _, c := range []struct {
		sealed bool
		outer  string
		want   bool
	}{{true, "", true}, {true, "1", false}, {false, "", false}} {
		var b bytes.Buffer
		p := treeDomain(Options{Policy: policy.Policy{Sealed: c.sealed}, OuterRun: c.outer}, &b)
		if p.Kind != landlock.None {
			t.Fatalf("withheld, yet %v", p)
		}
		said := strings.Contains(b.String(), "nettrap: --sealed without a Landlock domain (withheld by "+landlock.NoLandlockEnv+")")
		if said != c.want || strings.Count(b.String(), "\n") > 1 {
			t.Errorf("sealed=%v outer=%q: notice %q, want said %v once", c.sealed, c.outer, b.String(), c.want)
		}
	}
}
