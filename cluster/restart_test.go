package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

// A node restarted from its data directory catches up (from the log,
// and from a snapshot) with every lock, session and waiter; so does a
// whole cluster restarted.
func TestRestartResumesState(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	ctx := ctxT(t, 60*time.Second)
	l := tc.leader(10 * time.Second)
	victim := tc.index(tc.follower())
	other := tc.nodes[3-victim-tc.index(l)]

	s, err := l.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o1", TTLMs: 120000})
	if err != nil {
		t.Fatal(err)
	}
	// A waiter with a long wait stays in the table when its requester's
	// node goes away.
	wctx, cancelW := context.WithCancel(ctx)
	defer cancelW()
	go func() { // ends when the victim is killed or wctx ends
		tc.nodes[victim].Acquire(wctx, api.AcquireRequest{Key: "a", Owner: "w", TTLMs: 1000, WaitMs: 120000, RequestID: "waiter-1"})
	}()
	tc.waitState(l, 5*time.Second, "waiter queued", func(t *fsm.Table, now int64) bool {
		_, ok := t.Waiter("waiter-1")
		return ok
	})
	tc.kill(victim)

	// Progress while it is down, then a snapshot that compacts the log.
	if _, err := other.TryAcquire(ctx, api.AcquireRequest{Key: "b", Owner: "o2", TTLMs: 120000, Session: s.ID}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := l.FenceCheck(ctx, "res", uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}

	n := tc.restart(victim)
	want := l.AppliedIndex()
	tc.eventually(10*time.Second, "restarted node caught up", func() bool { return n.AppliedIndex() >= want })
	check := func(n *Node) {
		t.Helper()
		var problems []string
		err := n.Read(ctx, true, func(tb *fsm.Table, now int64) {
			if h, ok := tb.HoldOf("a", "o1", now); !ok || h.Fence != held.Fence {
				problems = append(problems, "hold a")
			}
			if _, ok := tb.HoldOf("b", "o2", now); !ok {
				problems = append(problems, "hold b")
			}
			if _, ok := tb.Session(s.ID, now); !ok {
				problems = append(problems, "session")
			}
			if _, ok := tb.Waiter("waiter-1"); !ok {
				problems = append(problems, "waiter")
			}
		})
		if err != nil || len(problems) > 0 {
			t.Fatalf("node %s after restart: %v %v", n.ID(), err, problems)
		}
	}
	check(n)

	// Whole-cluster restart.
	for i := range tc.nodes {
		tc.kill(i)
	}
	for i := range tc.nodes {
		tc.restart(i)
	}
	nl := tc.leader(15 * time.Second)
	// Reads after a restart are linearizable once the new leader has
	// applied the old log.
	if _, err := nl.Inspect(ctx, "a", api.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.nodes {
		tc.eventually(10*time.Second, "caught up", func() bool { return n.AppliedIndex() >= want })
		check(n)
	}
	// New grants are fenced above everything before.
	if _, err := nl.Release(ctx, api.ReleaseRequest{Key: "a", Owner: "o1"}); err != nil {
		t.Fatal(err)
	}
	tc.waitState(nl, 5*time.Second, "waiter granted", func(tb *fsm.Table, now int64) bool {
		h, ok := tb.HoldOf("a", "w", now)
		return ok && h.Fence > held.Fence
	})
}
