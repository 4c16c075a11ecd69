package lockservice

import (
	"slices"
	"testing"

	"github.com/locknode/locknode/fsm"
)

// Dispatch runs once per applied entry on every node: with subscribers
// and no local waiter it allocates nothing and takes no lock of the hub's
// (the subscriber list is read as published, the waiter registry only
// when a waiter is registered).
func TestDispatchAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	h := NewHub()
	var calls int
	defer h.Subscribe(func(uint64, []fsm.Event) { calls++ })()
	defer h.Subscribe(func(uint64, []fsm.Event) { calls++ })()
	evs := []fsm.Event{{Kind: fsm.EvGranted, Key: "k", Owner: "tok"}, {Kind: fsm.EvChanged, Key: "k"}}
	if a := testing.AllocsPerRun(200, func() { h.Dispatch(7, evs) }); a != 0 {
		t.Errorf("Dispatch allocates %.1f times per entry, want 0", a)
	}
	if calls == 0 {
		t.Fatal("no subscriber was called")
	}
}

// Subscribers are called in subscription order, a cancelled one no more,
// and a waiter still gets its outcome.
func TestDispatchSubscribersAndWaiters(t *testing.T) {
	h := NewHub()
	var got []string
	cancelA := h.Subscribe(func(i uint64, _ []fsm.Event) { got = append(got, "a") })
	cancelB := h.Subscribe(func(i uint64, _ []fsm.Event) { got = append(got, "b") })
	defer cancelB()
	cancelC := h.Subscribe(func(i uint64, _ []fsm.Event) { got = append(got, "c") })
	defer cancelC()
	h.Dispatch(1, nil)
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("called %v, want %v", got, want)
	}
	cancelA()
	got = nil
	ch := h.AwaitWaiter("w1")
	defer h.StopWaiter("w1")
	h.Dispatch(2, []fsm.Event{{Kind: fsm.EvGranted, WaiterID: "w1", Key: "k"}})
	if want := []string{"b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("after cancel called %v, want %v", got, want)
	}
	select {
	case we := <-ch:
		if we.index != 2 || we.ev.Kind != fsm.EvGranted {
			t.Fatalf("waiter got %+v", we)
		}
	default:
		t.Fatal("the waiter got no outcome")
	}
}
