package procmem

// The attack of issue 35 from a test, as code in a pull request would
// make it: integration's TestEscapeProcMem copies package procmem
// (integration/internal/procmem/procmem.go) beside this file and runs
// `go test` here, bare and under `nettrap -- go test`. The test walks up
// its parents to the go command, whose calls nettrap takes for the
// toolchain's, and attacks it (see procmem.Attack): the outcome goes to
// the file PROCMEM_RESULT names: once the payload is in, before the
// trigger (a go command dying of it may take this binary with it: an
// inner nettrap dies with its go command, and its test binary with it),
// and at the end, before anything is printed (a write to the dead go
// command's pipe would kill the binary).

import (
	"encoding/json"
	"net/netip"
	"os"
	"runtime"
	"testing"
)

func TestAttackGoCommand(t *testing.T) {
	dst, out := os.Getenv("PROCMEM_DST"), os.Getenv("PROCMEM_RESULT")
	if dst == "" || out == "" {
		t.Skip("PROCMEM_DST and PROCMEM_RESULT unset: integration's TestEscapeProcMem runs this test")
	}
	save := func(res Result) {
		b, err := json.Marshal(res)
		if err == nil {
			err = os.WriteFile(out+".new", b, 0o644)
		}
		if err == nil {
			err = os.Rename(out+".new", out)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var res Result
	if pid, err := FindGo(); err != nil {
		res.Steps = []Step{{Name: StepFind, Err: err.Error()}}
	} else {
		o := Options{Dst: netip.MustParseAddrPort(dst), Marker: os.Getenv("PROCMEM_MARKER"), Injected: save}
		if runtime.GOARCH != "amd64" {
			t.Logf("the payload is x86-64 code: %s gets the other steps only", runtime.GOARCH)
		}
		res = Attack(pid, o)
	}
	save(res)
}
