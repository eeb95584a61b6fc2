package run

import "testing"

func TestGodebugSetting(t *testing.T) {
	env := []string{"A=1", "GODEBUG=x=1," + GodebugKey + "=abc", "GODEBUG=" + GodebugKey + "=def"}
	if got := godebugSetting(env); got != GodebugKey+"=abc" {
		t.Errorf("godebugSetting = %q, want %s=abc (the first GODEBUG's)", got, GodebugKey)
	}
	if got := godebugSetting([]string{"GODEBUG=x=1"}); got != "" {
		t.Errorf("godebugSetting without the key = %q, want none", got)
	}
}
