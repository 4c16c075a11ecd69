package testcluster

import (
	"context"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

func TestCrashRestartPartition(t *testing.T) {
	c := New(t, 3, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := c.LeaderIndex()
	lease, err := c.Locker((l+1)%3).TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "a", TTLMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	c.Crash(l)
	nl, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nl == l {
		t.Fatalf("crashed node %d still leads", l)
	}
	info, err := c.Locker(nl).Inspect(ctx, "k", api.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != "a" || info.Holders[0].Fence != lease.Fence {
		t.Fatalf("after leader crash: %+v, want a with fence %d", info, lease.Fence)
	}
	c.Restart(l)
	// Cut the leader off: the majority elects another one.
	c.Isolate(nl)
	nl2, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nl2 == nl {
		t.Fatalf("isolated node %d still leads", nl)
	}
	if _, err := c.Locker(nl2).TryAcquire(ctx, api.AcquireRequest{Key: "k2", Owner: "b", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	c.Heal()
	idx := c.Node(nl2).AppliedIndex()
	if err := c.WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
}
