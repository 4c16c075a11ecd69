package lockservice

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// waitWatchers waits until w has n callers blocked in wait.
func waitWatchers(t *testing.T, w *KeyWatches, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.watchers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("watchers = %d, want %d", w.watchers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

type waitResult struct {
	idx uint64
	err error
}

func startWait(ctx context.Context, w *KeyWatches, key string, prefix bool, index uint64) <-chan waitResult {
	ch := make(chan waitResult, 1)
	// Ends when wait returns (a change, ctx, or stop).
	go func() {
		idx, err := w.wait(ctx, nil, key, prefix, index)
		ch <- waitResult{idx, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return")
		return waitResult{}
	}
}

func TestKeyWatchesIndex(t *testing.T) {
	w := newKeyWatches()
	if got := w.index("a", false); got != 0 {
		t.Fatalf("index of a key before any change = %d, want 0", got)
	}
	// Index 0 waits for the first change, at index 1.
	first := startWait(t.Context(), w, "a", false, 0)
	waitWatchers(t, w, 1)
	w.applied(1, []fsm.Event{{Kind: fsm.EvChanged, Key: "a"}})
	if r := recv(t, first); r.idx != 1 || r.err != nil {
		t.Fatalf("wait from 0 = %+v, want 1", r)
	}
	w.applied(5, []fsm.Event{{Kind: fsm.EvChanged, Key: "a"}})
	w.applied(7, []fsm.Event{{Kind: fsm.EvPublish, Channel: "c"}})
	if got := w.index("b", false); got != 5 {
		t.Fatalf("untracked key answers %d, want the floor 5", got)
	}
	// An older index answers at once with the current one.
	if r := recv(t, startWait(t.Context(), w, "a", false, 4)); r.idx != 5 || r.err != nil {
		t.Fatalf("wait from an older index = %+v, want 5 at once", r)
	}
	// The key now has a record: its index is exact and other keys'
	// changes do not move it.
	w.applied(9, []fsm.Event{{Kind: fsm.EvValueChanged, Key: "b"}})
	if got := w.index("a", false); got != 5 {
		t.Fatalf("tracked key's index = %d after another key's change, want 5", got)
	}
	if got := w.index("zzz", false); got != 9 {
		t.Fatalf("untracked key answers %d, want the floor 9", got)
	}
}

func TestKeyWatchesWakeOnlyTheChangedKey(t *testing.T) {
	w := newKeyWatches()
	w.applied(3, []fsm.Event{{Kind: fsm.EvChanged, Key: "a"}})
	a := startWait(t.Context(), w, "a", false, 3)
	p := startWait(t.Context(), w, "jobs/", true, w.index("jobs/", true))
	waitWatchers(t, w, 2)

	w.mu.Lock()
	chA := w.keys["a"].ch
	w.mu.Unlock()
	w.applied(4, []fsm.Event{{Kind: fsm.EvChanged, Key: "b"}, {Kind: fsm.EvPublish}})
	select {
	case <-chA:
		t.Fatal("a change of b woke a watcher of a")
	default:
	}
	// Each kind of event that changes a key wakes its watchers.
	for i, ev := range []fsm.Event{
		{Kind: fsm.EvReleased, Key: "a"},
		{Kind: fsm.EvGranted, Keys: []string{"x", "a"}},
		{Kind: fsm.EvWaitEnded, Keys: []string{"a"}},
		{Kind: fsm.EvValueChanged, Key: "a"},
		{Kind: fsm.EvChanged, Key: "a"},
	} {
		idx := uint64(10 + i)
		if i > 0 {
			a = startWait(t.Context(), w, "a", false, idx-1)
			waitWatchers(t, w, 2)
		}
		w.applied(idx, []fsm.Event{ev})
		if r := recv(t, a); r.idx != idx || r.err != nil {
			t.Fatalf("event %d: wait = %+v, want index %d", ev.Kind, r, idx)
		}
	}
	w.applied(20, []fsm.Event{{Kind: fsm.EvChanged, Key: "jobs/nightly"}})
	if r := recv(t, p); r.idx != 20 || r.err != nil {
		t.Fatalf("prefix wait = %+v, want 20", r)
	}
	if w.watchers() != 0 {
		t.Fatalf("watchers = %d after every wait returned", w.watchers())
	}
}

func TestKeyWatchesRestoreWakesAll(t *testing.T) {
	w := newKeyWatches()
	a := startWait(t.Context(), w, "a", false, 1)
	b := startWait(t.Context(), w, "", true, 1)
	waitWatchers(t, w, 2)
	w.applied(50, []fsm.Event{{Kind: fsm.EvRestored}})
	for _, ch := range []<-chan waitResult{a, b} {
		if r := recv(t, ch); r.idx != 50 {
			t.Fatalf("after a restore: %+v, want 50", r)
		}
	}
	if got := w.index("never-seen", false); got != 50 {
		t.Fatalf("after a restore an untracked key answers %d, want 50", got)
	}
}

func TestKeyWatchesCancel(t *testing.T) {
	w := newKeyWatches()
	ctx, cancel := context.WithCancel(t.Context())
	ch := startWait(ctx, w, "a", false, 1)
	waitWatchers(t, w, 1)
	cancel()
	if r := recv(t, ch); !errors.Is(r.err, context.Canceled) || r.idx != 0 {
		t.Fatalf("cancelled wait = %+v, want context.Canceled at index 0", r)
	}
	if w.watchers() != 0 {
		t.Fatalf("watchers = %d after cancel", w.watchers())
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := w.wait(t.Context(), stop, "a", false, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait on a closed node: %v, want ErrClosed", err)
	}
	// A change from another node's numbering that this node has not
	// reached yet keeps waiting.
	ch = startWait(t.Context(), w, "a", false, 100)
	waitWatchers(t, w, 1)
	w.applied(60, []fsm.Event{{Kind: fsm.EvChanged, Key: "a"}})
	w.applied(101, []fsm.Event{{Kind: fsm.EvChanged, Key: "a"}})
	if r := recv(t, ch); r.idx != 101 {
		t.Fatalf("wait from 100 = %+v, want 101 (not the change at 60)", r)
	}
}

func TestKeyWatchesIdleBounded(t *testing.T) {
	w := newKeyWatches()
	w.applied(1, []fsm.Event{{Kind: fsm.EvChanged, Key: "x"}})
	for i := range maxIdleWatchRecs + 100 {
		if _, err := w.wait(t.Context(), nil, fmt.Sprint("k", i), i%2 == 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	n, lens := len(w.keys)+len(w.pfx), len(w.pfxLens)
	w.mu.Unlock()
	if n != maxIdleWatchRecs {
		t.Fatalf("%d records kept without watchers, want %d", n, maxIdleWatchRecs)
	}
	// Dropped records answer the floor, never below their change.
	w.applied(7, []fsm.Event{{Kind: fsm.EvChanged, Key: "k1"}})
	if got := w.index("k1", false); got < 7 {
		t.Fatalf("index of k1 = %d after its change at 7", got)
	}
	if lens == 0 {
		t.Fatal("no prefix lengths counted")
	}
}
