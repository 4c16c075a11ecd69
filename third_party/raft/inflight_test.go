package raft

import (
	"math/rand"
	"testing"
	"time"
)

// TestInflightQueue runs random pushes and pops against a plain slice:
// the queue holds the same futures in the same order, drops what it
// popped (nothing past the queued part keeps a reference), and its
// backing slice stays within four times the most ever queued at once
// (it grows only while more than half of it is queued).
func TestInflightQueue(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var q inflightQueue
	var model []*logFuture
	next, most := uint64(1), 0
	for step := 0; step < 20000; step++ {
		if rng.Intn(2) == 0 {
			for n := rng.Intn(40); n > 0; n-- {
				f := &logFuture{log: Log{Index: next}}
				next++
				q.pushBack(f)
				model = append(model, f)
			}
		} else if len(model) > 0 {
			n := rng.Intn(len(model) + 1)
			q.popFront(n)
			model = model[n:]
		}
		if len(model) > most {
			most = len(model)
		}
		got := q.all()
		if len(got) != len(model) {
			t.Fatalf("step %d: %d queued, want %d", step, len(got), len(model))
		}
		for i := range got {
			if got[i] != model[i] {
				t.Fatalf("step %d: position %d holds index %d, want %d", step, i, got[i].log.Index, model[i].log.Index)
			}
		}
		for i, f := range q.q[:q.head] {
			if f != nil {
				t.Fatalf("step %d: popped slot %d still holds index %d", step, i, f.log.Index)
			}
		}
		if c := cap(q.q); c > 4*most+64 {
			t.Fatalf("step %d: capacity %d with at most %d queued", step, c, most)
		}
	}
	q.popFront(len(q.all()))
	if len(q.all()) != 0 || q.head != 0 {
		t.Fatalf("emptied queue: %d queued, head %d", len(q.all()), q.head)
	}
}
