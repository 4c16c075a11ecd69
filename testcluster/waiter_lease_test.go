package testcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

// TestDeadNodesWaiterCancelled: a blocking acquire queued through node B;
// B is killed while it waits. Nobody can be told of a grant any more, so
// the waiter must leave the queue (within the waiter lease) instead of
// being handed the lock later and holding it for its whole TTL for
// nobody; the next holder gets the lock as soon as it is released.
func TestDeadNodesWaiterCancelled(t *testing.T) {
	const lease = 1500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		leader bool // kill the leader (else a follower)
	}{
		{"follower killed", false},
		{"leader killed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(t, 3, Options{Config: func(_ int, cfg *cluster.Config) { cfg.WaiterLease = lease }})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			l := c.LeaderIndex()
			b, h := (l+1)%3, (l+2)%3
			if tc.leader {
				b = l
			}
			const key = "queue"
			if _, err := c.Locker(h).TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "holder", TTLMs: 60000}); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			// Ends when node b is killed (its request fails) or ctx ends.
			go func() {
				_, err := c.Locker(b).Acquire(ctx, api.AcquireRequest{Key: key, Owner: "orphan", TTLMs: 60000, WaitMs: 60000})
				waited <- err
			}()
			waiters := func() int {
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				defer rcancel()
				info, err := c.Locker(h).Inspect(rctx, key, api.ReadOptions{})
				if err != nil {
					return -1
				}
				return len(info.Waiters)
			}
			if _, err := waitFor(ctx, 20*time.Millisecond, func() (int, bool) { n := waiters(); return n, n == 1 }); err != nil {
				t.Fatalf("the acquire never queued: %v", err)
			}
			c.Crash(b)
			if err := <-waited; err == nil {
				t.Fatal("the acquire on the killed node was granted")
			}
			killed := time.Now()
			wctx, wcancel := context.WithTimeout(ctx, lease+15*time.Second)
			defer wcancel()
			if _, err := waitFor(wctx, 50*time.Millisecond, func() (int, bool) { n := waiters(); return n, n == 0 }); err != nil {
				t.Fatalf("the dead node's waiter still queued %v after the kill (waiter lease %v): %v", time.Since(killed), lease, err)
			}
			t.Logf("waiter gone %v after the kill", time.Since(killed))
			if _, err := c.Locker(h).Release(ctx, api.ReleaseRequest{Key: key, Owner: "holder"}); err != nil {
				t.Fatal(err)
			}
			_, err := c.Locker(h).TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "next", TTLMs: 60000})
			if errors.Is(err, api.ErrLocked) {
				info, _ := c.Locker(h).Inspect(ctx, key, api.ReadOptions{})
				t.Fatalf("the lock went to nobody: %+v", info.Holders)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
