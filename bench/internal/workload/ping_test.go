package main

import "testing"

// TestPingFigures runs the udpping op bare and checks that its figures
// hang together: every ping measured once, the answer never before the
// send was made, the share a share. Nothing is asserted about how long
// anything takes.
func TestPingFigures(t *testing.T) {
	measures = nil
	op, cleanup, err := ops["udpping"]()
	if err != nil {
		t.Fatalf("set up: %v", err)
	}
	defer cleanup()
	f, ok := measures.(*pingFigures)
	if !ok {
		t.Fatalf("udpping's maker left measures = %T, want *pingFigures", measures)
	}
	for i := 0; i < 10; i++ { // a warm-up, which reset forgets
		if err := op(); err != nil {
			t.Fatal(err)
		}
	}
	f.reset()
	const n = 200
	for i := 0; i < n; i++ {
		if err := op(); err != nil {
			t.Fatalf("ping %d: %v", i, err)
		}
	}
	for i := range f.beforeToAnswer {
		if f.beforeToAnswer[i] < f.afterToAnswer[i] {
			t.Fatalf("ping %d: from before the send %d ns, from after it %d ns: the send returned before it was made", i, f.beforeToAnswer[i], f.afterToAnswer[i])
		}
		if f.beforeToAnswer[i] <= 0 {
			t.Fatalf("ping %d: answered %d ns after the send was made", i, f.beforeToAnswer[i])
		}
	}
	var r result
	f.fill(&r)
	if r.Ping == nil || r.Ping.N != n {
		t.Fatalf("fill: %+v, want %d pings", r.Ping, n)
	}
	if r.Ping.AnswerFirst < 0 || r.Ping.AnswerFirst > 1 {
		t.Errorf("answer-first share %v", r.Ping.AnswerFirst)
	}
	if r.Ping.BeforeSendToAnswer < r.Ping.AfterSendToAnswer {
		t.Errorf("median from before the send %v < from after it %v", r.Ping.BeforeSendToAnswer, r.Ping.AfterSendToAnswer)
	}
}
