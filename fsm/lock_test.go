package fsm

import (
	"errors"
	"testing"
)

// harness applies commands with increasing indexes.
type harness struct {
	t    testing.TB
	tab  *Table
	idx  uint64
	time int64 // last command time (golden scripts: at= is sticky)
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, tab: New(Config{})}
}

func (h *harness) apply(c Command) Result {
	h.idx++
	return h.tab.Apply(h.idx, &c)
}

func TestSmokeExclusiveHandoff(t *testing.T) {
	h := newHarness(t)
	r := h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 1000, Time: 10})
	if !r.Granted || r.Fence != 1 || r.Deadline != 1010 {
		t.Fatalf("first acquire: %+v", r)
	}
	r = h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o2", TTL: 1000, Wait: 500, ReqID: "w2", Time: 20})
	if !r.Queued || r.Deadline != 520 {
		t.Fatalf("second acquire: %+v", r)
	}
	r = h.apply(Command{Op: OpRelease, Key: "a", Owner: "o1", Time: 30})
	if !r.Released || r.Err != nil {
		t.Fatalf("release: %+v", r)
	}
	var granted *Event
	for i := range r.Events {
		if r.Events[i].Kind == EvGranted {
			granted = &r.Events[i]
		}
	}
	if granted == nil || granted.WaiterID != "w2" || granted.Fence != 3 || granted.Deadline != 1030 {
		t.Fatalf("events: %+v", r.Events)
	}
	r = h.apply(Command{Op: OpRelease, Key: "a", Owner: "o1", Time: 40})
	if !errors.Is(r.Err, ErrNotOwner) {
		t.Fatalf("stranger release: %+v", r)
	}
	r = h.apply(Command{Op: OpTick, Time: 2000})
	if len(h.tab.keys) != 0 {
		t.Fatalf("keys left: %v events %+v", h.tab.keys, r.Events)
	}
}
