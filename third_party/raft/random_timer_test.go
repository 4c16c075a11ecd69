package raft

import (
	"testing"
	"time"
)

// TestRandomTimer checks the reused replicator timer: it fires once
// between minVal and twice minVal after a reset, a reset replaces the
// period before it, and a zero minVal never fires.
func TestRandomTimer(t *testing.T) {
	rt := newRandomTimer()
	defer rt.stop()
	if ch := rt.reset(0); ch != nil {
		t.Fatal("reset(0) returned a channel")
	}
	const d = 20 * time.Millisecond
	for i := 0; i < 3; i++ {
		rt.reset(time.Hour) // replaced by the next reset
		start := time.Now()
		select {
		case <-rt.reset(d):
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no firing within 10s of a %v reset", i, d)
		}
		if el := time.Since(start); el < d {
			t.Fatalf("round %d: fired after %v, before %v", i, el, d)
		}
		// Fired once: the next period starts clean.
		select {
		case <-rt.reset(time.Hour):
			t.Fatalf("round %d: fired again at once after a reset", i)
		default:
		}
	}
}
