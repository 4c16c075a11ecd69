package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

func TestHandoffGate(t *testing.T) {
	released := func(key string) fsm.Event { return fsm.Event{Kind: fsm.EvReleased, Key: key} }
	granted := func(keys ...string) fsm.Event { return fsm.Event{Kind: fsm.EvGranted, Keys: keys} }
	tests := []struct {
		name   string
		events []fsm.Event
		opened map[string]bool // key → whether its waiters were let go
	}{
		{"release that granted nobody frees the key", []fsm.Event{released("a")}, map[string]bool{"a": true, "b": false}},
		{"hand-off to a waiter keeps it held", []fsm.Event{released("a"), granted("a")}, map[string]bool{"a": false}},
		{"grant listed first still counts", []fsm.Event{granted("a"), released("a")}, map[string]bool{"a": false}},
		{"a grant of another key does not", []fsm.Event{released("a"), granted("b")}, map[string]bool{"a": true, "b": false}},
		{"multi-key grant", []fsm.Event{released("a"), released("b"), granted("x", "b")}, map[string]bool{"a": true, "b": false}},
		{"no release, nothing opens", []fsm.Event{granted("a"), {Kind: fsm.EvChanged, Key: "a"}}, map[string]bool{"a": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g handoffGate
			chs := map[string]<-chan struct{}{}
			for k := range tt.opened {
				ch, d := g.wait(k)
				if d != handoffMaxDefer {
					t.Fatalf("default max defer %v, want %v", d, handoffMaxDefer)
				}
				chs[k] = ch
			}
			g.openFreed(tt.events)
			for k, want := range tt.opened {
				select {
				case <-chs[k]:
					if !want {
						t.Errorf("%s opened", k)
					}
				default:
					if want {
						t.Errorf("%s still closed", k)
					}
				}
				if w := g.waiting(k); (w == 0) != want {
					t.Errorf("%s: %d waiting after open = %v", k, w, want)
				}
			}
		})
	}
	t.Run("open lets every waiter of the key go, once", func(t *testing.T) {
		var g handoffGate
		a1, _ := g.wait("k")
		a2, _ := g.wait("k")
		g.open("k")
		<-a1
		<-a2
		g.leave("k", a1)
		g.open("k") // nothing waits: no panic on a closed channel
		g.leave("k", a2)
		a3, _ := g.wait("k")
		select {
		case <-a3:
			t.Fatal("a wait after open is already open")
		default:
		}
		if w := g.waiting("k"); w != 1 {
			t.Fatalf("%d waiting, want 1", w)
		}
		g.leave("k", a2) // an old channel's leave does not count
		if w := g.waiting("k"); w != 1 {
			t.Fatalf("%d waiting after a stale leave, want 1", w)
		}
		g.leave("k", a3)
		if w := g.waiting("k"); w != 0 || len(g.keys) != 0 {
			t.Fatalf("%d waiting, %d keys kept after the last leave", w, len(g.keys))
		}
	})
}

// One entry may carry a whole fill of keys expiring at once. openFreed
// runs on the leader's apply path, so it must cost one pass over the
// entry's events: a pass per release (quadratic) kept a leader's apply
// busy for minutes with 120,000 events, its term's clock unset and every
// request waiting for its timeout. Here a pass per release (150k × 200k
// comparisons) would run past the package's timeout; what one pass costs
// is BenchmarkHandoffGateManyEvents'.
func TestHandoffGateManyEvents(t *testing.T) {
	events := manyEvents(150_000, 50_000)
	for _, waiters := range []bool{false, true} {
		var g handoffGate
		var freed, handed <-chan struct{}
		if waiters {
			freed, _ = g.wait("r7")
			handed, _ = g.wait("g7")
		}
		g.openFreed(events)
		if !waiters {
			continue
		}
		select {
		case <-freed:
		default:
			t.Fatal("a freed key's waiters were not let go")
		}
		select {
		case <-handed:
			t.Fatal("a key handed on in the same entry was opened")
		default:
		}
	}
}

func BenchmarkHandoffGateManyEvents(b *testing.B) {
	events := manyEvents(150_000, 50_000)
	for b.Loop() {
		var g handoffGate
		_, _ = g.wait("r7")
		g.openFreed(events)
	}
}

// manyEvents is one entry's events: released keys r0.., keys granted
// g0.., then releases of g7 (granted in the same entry) and r7.
func manyEvents(released, granted int) []fsm.Event {
	events := make([]fsm.Event, 0, released+granted+2)
	for i := range released {
		events = append(events, fsm.Event{Kind: fsm.EvReleased, Key: fmt.Sprint("r", i)})
	}
	for i := range granted {
		events = append(events, fsm.Event{Kind: fsm.EvGranted, Keys: []string{fmt.Sprint("g", i)}})
	}
	return append(events, fsm.Event{Kind: fsm.EvReleased, Key: "g7"}, fsm.Event{Kind: fsm.EvReleased, Key: "r7"})
}

// holdBack makes the leader hold queued acquires back until a release
// (or the key being freed), however long that takes, so that tests can
// see them held.
func holdBack(t *testing.T, n *Node) *leadership {
	t.Helper()
	l := n.lead.Load()
	if l == nil {
		t.Fatal("not the leader")
	}
	l.handoff.mu.Lock()
	l.handoff.maxDefer = time.Minute
	l.handoff.mu.Unlock()
	return l
}

type acquired struct {
	lease api.Lease
	err   error
}

func acquireAsync(ctx context.Context, n *Node, req api.AcquireRequest) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() { // ends when the acquire returns
		l, err := n.Acquire(ctx, req)
		ch <- acquired{l, err}
	}()
	return ch
}

func waiters(t *testing.T, n *Node, key string) int {
	t.Helper()
	c := 0
	if err := n.Read(context.Background(), true, func(tb *fsm.Table, now int64) {
		if li, err := tb.Inspect(key, now); err == nil {
			c = len(li.Waiters)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// A blocking acquire of a lock held by another owner is held back on the
// leader until the holder's release is proposed, and then granted by
// it; forwarded requests (acquire and release through followers) take
// the same path.
func TestQueuedAcquireJoinsTheRelease(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	gate := holdBack(t, l)
	var f1, f2 *Node
	for _, n := range tc.nodes {
		if n != l {
			if f1 == nil {
				f1 = n
			} else {
				f2 = n
			}
		}
	}
	ctx := ctxT(t, 30*time.Second)
	tests := []struct {
		name               string
		holder, rel, waitr *Node
	}{
		{"on the leader", l, l, l},
		{"through followers", f1, f1, f2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "k/" + tt.name
			if _, err := tt.holder.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "holder", TTLMs: 60000}); err != nil {
				t.Fatal(err)
			}
			got := acquireAsync(ctx, tt.waitr, api.AcquireRequest{Key: key, Owner: "waiter", TTLMs: 60000, WaitMs: 20000})
			tc.eventually(5*time.Second, "the acquire held back", func() bool { return gate.handoff.waiting(key) > 0 })
			// Held back, not queued: the leader's table has no waiter.
			if w := waiters(t, l, key); w != 0 {
				t.Fatalf("%d waiters while the acquire is held back", w)
			}
			select {
			case r := <-got:
				t.Fatalf("returned while the lock is held: %+v", r)
			default:
			}
			if _, err := tt.rel.Release(ctx, api.ReleaseRequest{Key: key, Owner: "holder"}); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil || r.lease.Fence == 0 {
				t.Fatalf("waiter: %+v", r)
			}
		})
	}
}

// Held-back acquires are let go when the key is freed by anything other
// than a release proposed here (an expiry, a Redis DEL), and when their
// caller gives up; the holder's own repeat is never held back.
func TestHeldBackAcquireLetGo(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	l := tc.leader(10 * time.Second)
	gate := holdBack(t, l)
	ctx := ctxT(t, 30*time.Second)

	t.Run("expiry", func(t *testing.T) {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "exp", Owner: "holder", TTLMs: 300}); err != nil {
			t.Fatal(err)
		}
		got := acquireAsync(ctx, l, api.AcquireRequest{Key: "exp", Owner: "waiter", TTLMs: 60000, WaitMs: 20000})
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not granted after the holder's lease ended")
		}
	})

	t.Run("redis DEL", func(t *testing.T) {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "del", Owner: "holder", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
		got := acquireAsync(ctx, l, api.AcquireRequest{Key: "del", Owner: "waiter", TTLMs: 60000, WaitMs: 20000})
		tc.eventually(5*time.Second, "the acquire held back", func() bool { return gate.handoff.waiting("del") > 0 })
		res, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), []byte("del")}})
		if err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not granted after DEL")
		}
	})

	t.Run("caller gives up", func(t *testing.T) {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "gone", Owner: "holder", TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		got := acquireAsync(cctx, l, api.AcquireRequest{Key: "gone", Owner: "waiter", TTLMs: 60000, WaitMs: 20000})
		tc.eventually(5*time.Second, "the acquire held back", func() bool { return gate.handoff.waiting("gone") > 0 })
		cancel()
		r := <-got
		if !errors.Is(r.err, api.ErrCancelled) && !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want a cancellation", r.err)
		}
		if w := waiters(t, l, "gone"); w != 0 {
			t.Fatalf("%d waiters left behind", w)
		}
	})

	t.Run("holder's repeat", func(t *testing.T) {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "mine", Owner: "holder", TTLMs: 60000, Reentrant: true}); err != nil {
			t.Fatal(err)
		}
		r, err := l.Acquire(ctx, api.AcquireRequest{Key: "mine", Owner: "holder", TTLMs: 60000, WaitMs: 20000, Reentrant: true})
		if err != nil || r.Count != 2 {
			t.Fatalf("reentrant acquire: %+v, %v", r, err)
		}
		if _, err := l.Acquire(ctx, api.AcquireRequest{Key: "free", Owner: "o", TTLMs: 60000, WaitMs: 20000}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"mine", "free"} {
			if w := gate.handoff.waiting(k); w != 0 {
				t.Errorf("%s: %d acquires left waiting in the gate", k, w)
			}
		}
	})
}

// Contended hand-offs stay exclusive and every worker gets its turns
// while re-queues are held back for the releases.
func TestContendedHandoffs(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	const workers, rounds = 6, 15
	var mu sync.Mutex
	holding := ""
	var fences []uint64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() { // ends after its rounds or on the first error
			defer wg.Done()
			owner := string(rune('a' + w))
			for range rounds {
				lease, err := l.Acquire(ctx, api.AcquireRequest{Key: "c", Owner: owner, TTLMs: 60000, WaitMs: 30000})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if holding != "" {
					mu.Unlock()
					errs <- errors.New(owner + " granted while " + holding + " holds")
					return
				}
				holding = owner
				fences = append(fences, lease.Fence)
				holding = ""
				mu.Unlock()
				if _, err := l.Release(ctx, api.ReleaseRequest{Key: "c", Owner: owner}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(fences) != workers*rounds {
		t.Fatalf("%d acquisitions, want %d", len(fences), workers*rounds)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences not increasing at %d: %v", i, fences)
		}
	}
}
