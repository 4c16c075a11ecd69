package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

func proposals(t *testing.T, n *Node, op string) float64 {
	return counter(t, n, n.metrics.proposals, op)
}

// allProposals sums op's proposals over every node: after a leadership
// change a command is proposed (and counted) by the new leader.
func (tc *testCluster) allProposals(op string) float64 {
	var sum float64
	for _, n := range tc.nodes {
		sum += proposals(tc.t, n, op)
	}
	return sum
}

// A blocked acquire on a follower is completed by the grant being
// applied there: one acquire, the holder's release, and Ticks; nothing
// else travels while it waits.
func TestBlockedAcquireWithoutPolling(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	ctx := ctxT(t, 30*time.Second)
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "holder", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	ops := []string{"acquire", "release", "extend", "cancel_wait", "session_open", "session_keepalive", "fence_check", "redis"}
	before := map[string]float64{}
	for _, op := range ops {
		before[op] = tc.allProposals(op)
	}
	term := l.Raft().CurrentTerm()
	fwdBefore := counter(t, f, f.metrics.forwardCalls, "apply")
	readsBefore := counter(t, f, f.metrics.forwardCalls, "read_index")

	type res struct {
		l   api.Lease
		err error
	}
	got := make(chan res, 1)
	go func() { // ends when the acquire returns
		l, err := f.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "waiter", TTLMs: 60000, WaitMs: 20000})
		got <- res{l, err}
	}()
	tc.waitState(f, 5*time.Second, "waiter queued", func(t *fsm.Table, now int64) bool {
		li, err := t.Inspect("k", now)
		return err == nil && len(li.Waiters) == 1
	})
	// Time passes while it waits (several tick intervals): if anything
	// polled, the counters below would show it.
	select {
	case r := <-got:
		t.Fatalf("returned while the lock is held: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := l.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "holder"}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.l.Fence == 0 {
		t.Fatalf("waiter: %+v", r)
	}
	// On a loaded machine leadership may move while the waiter waits; a
	// command caught by the change is proposed again by the new leader,
	// so then only "nothing else was proposed" is exact.
	moved := false
	for _, n := range tc.nodes {
		if n.Raft().CurrentTerm() != term {
			moved = true
		}
	}
	for _, op := range ops {
		want := before[op]
		if op == "acquire" || op == "release" {
			want++
		}
		got := tc.allProposals(op)
		if got != want && !(moved && got > want && got <= want+2) {
			t.Errorf("%s proposals: %v, want %v (leadership moved: %v)", op, got, want, moved)
		}
	}
	if d := counter(t, f, f.metrics.forwardCalls, "apply") - fwdBefore; d != 1 && !(moved && d >= 1 && d <= 3) {
		t.Errorf("follower forwarded %v commands, want 1 (leadership moved: %v)", d, moved)
	}
	if d := counter(t, f, f.metrics.forwardCalls, "read_index") - readsBefore; d != 0 {
		t.Errorf("follower asked %v read indexes, want 0", d)
	}
}

// A session that is not kept alive expires: its hold is released and the
// lock handed to the waiters in FIFO order, whichever node they wait on.
func TestSessionExpiryHandsOffFIFO(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	a, b, c := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	// The session's lease starts when the leader stamps its entry, after
	// this instant.
	opened := time.Now()
	s, err := a.OpenSession(ctx, 800*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "h", Session: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		who string
		l   api.Lease
		err error
	}
	got := make(chan res, 2)
	wait := func(n *Node, owner string) {
		go func() { // ends when the acquire returns
			l, err := n.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: owner, TTLMs: 60000, WaitMs: 20000})
			got <- res{owner, l, err}
		}()
	}
	queued := func(k int) func(*fsm.Table, int64) bool {
		return func(t *fsm.Table, now int64) bool {
			li, err := t.Inspect("k", now)
			return err == nil && len(li.Waiters) == k
		}
	}
	wait(b, "first")
	tc.waitState(b, 5*time.Second, "first queued", queued(1))
	wait(c, "second")
	tc.waitState(c, 5*time.Second, "second queued", queued(2))

	r1 := <-got
	t.Logf("session expiry handed the lock over %v after the session was opened (ttl 800ms)", time.Since(opened))
	if r1.err != nil || r1.who != "first" || r1.l.Fence <= h.Fence {
		t.Fatalf("first grant: %+v (holder fence %d)", r1, h.Fence)
	}
	if time.Since(opened) < 800*time.Millisecond {
		t.Fatalf("lease ended early")
	}
	select {
	case r := <-got:
		t.Fatalf("second granted while first holds: %+v", r)
	default:
	}
	if _, err := b.Release(ctx, api.ReleaseRequest{Key: "k", Owner: "first"}); err != nil {
		t.Fatal(err)
	}
	r2 := <-got
	if r2.err != nil || r2.who != "second" || r2.l.Fence <= r1.l.Fence {
		t.Fatalf("second grant: %+v", r2)
	}
	if _, err := a.KeepAlive(ctx, s.ID); err == nil {
		t.Fatalf("keepalive of an expired session succeeded")
	}
}

// Cancelling a blocked acquire removes its waiter through the log.
func TestAcquireCancel(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	f := tc.follower()
	ctx := ctxT(t, 30*time.Second)
	if _, err := f.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "h", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { // ends when the acquire returns (cancel below)
		_, err := f.Acquire(wctx, api.AcquireRequest{Key: "k", Owner: "w", TTLMs: 60000})
		done <- err
	}()
	tc.waitState(f, 5*time.Second, "waiter queued", func(t *fsm.Table, now int64) bool {
		li, err := t.Inspect("k", now)
		return err == nil && len(li.Waiters) == 1
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled acquire succeeded")
	}
	for _, n := range tc.nodes {
		li, err := n.Inspect(ctx, "k", api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(li.Waiters) != 0 || li.Holders[0].Owner != "h" {
			t.Fatalf("%s: %+v", n.ID(), li)
		}
	}
	// A wait bounded by WaitMs ends with ErrWaitTimeout, decided in the log.
	start := time.Now()
	_, err := f.Acquire(ctx, api.AcquireRequest{Key: "k", Owner: "w2", TTLMs: 60000, WaitMs: 300})
	if err == nil || !isErr(err, api.ErrWaitTimeout) {
		t.Fatalf("bounded wait: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("wait ended after %v, before its 300ms", d)
	}
}
