package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/testcluster"
)

// A Go lock handle against a real cluster: its context must end before
// the server could give the lock to anyone else, whatever the wait before
// the grant and whatever the max hold.
func TestHandleDeadlines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	tc := testcluster.New(t, 3, testcluster.Options{})
	ctx := context.Background()

	t.Run("a lock granted after a long wait is held", func(t *testing.T) {
		// The wait (3 s) is longer than the lease (2 s): counted from the
		// acquire's send time alone, the handle would be born lost.
		const wait, ttl = 3 * time.Second, 2 * time.Second
		if _, err := tc.Locker(0).TryAcquire(ctx, api.AcquireRequest{Key: "edge/wait", Owner: "first", TTLMs: 30_000}); err != nil {
			t.Fatal(err)
		}
		release := time.AfterFunc(wait, func() {
			_, _ = tc.Locker(0).Release(ctx, api.ReleaseRequest{Key: "edge/wait", Owner: "first"})
		})
		defer release.Stop()
		c := newClient(t, tc.Endpoints())
		sent := time.Now()
		l, err := c.Lock(ctx, "edge/wait", client.WithTTL(ttl), client.WithWait(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		if waited := time.Duration(l.Lease().WaitedMs) * time.Millisecond; waited < wait-500*time.Millisecond {
			t.Fatalf("lease says it waited %v, want about %v", waited, wait)
		}
		if st := l.State(); st != client.Held || l.Context().Err() != nil {
			t.Fatalf("after a %v wait the handle is %v (context %v), want held", time.Since(sent), st, context.Cause(l.Context()))
		}
		if got, min := l.SafeDeadline().Sub(sent), wait; got < min {
			t.Fatalf("safe deadline %v after send, want at least the wait %v", got, min)
		}
		// And it renews: still held two leases later.
		deadline := time.Now().Add(2 * ttl)
		for time.Now().Before(deadline) {
			select {
			case <-l.Lost():
				t.Fatalf("lost while renewing: %v", context.Cause(l.Context()))
			case <-time.After(50 * time.Millisecond):
			}
		}
	})

	t.Run("max hold ends the handle before anyone else is granted", func(t *testing.T) {
		const ttl, maxHold = 9 * time.Second, 1500 * time.Millisecond
		c, other := newClient(t, tc.Endpoints()), newClient(t, tc.Endpoints())
		l, err := c.Lock(ctx, "edge/maxhold", client.WithTTL(ttl), client.WithMaxHold(maxHold))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		if got := time.Duration(l.Lease().TTLMs) * time.Millisecond; got > maxHold {
			t.Fatalf("grant answered ttl %v, want at most the max hold %v", got, maxHold)
		}
		granted := make(chan time.Time, 1)
		go func() {
			l2, err := other.Lock(ctx, "edge/maxhold", client.WithTTL(ttl), client.WithWait(20*time.Second))
			at := time.Now()
			if err != nil {
				t.Errorf("second lock: %v", err)
				close(granted)
				return
			}
			granted <- at
			_ = l2.Unlock(ctx)
		}()
		var ended time.Time
		select {
		case <-l.Context().Done():
			ended = time.Now()
		case at := <-granted:
			t.Fatalf("another client was granted at %v while the first handle's context was live", at)
		}
		at, ok := <-granted
		if !ok {
			return
		}
		if !ended.Before(at) {
			t.Fatalf("first handle's context ended at %v, after the second grant at %v", ended, at)
		}
	})
}

// A Lock whose caller gives up while the hand-off is in flight leaves no
// hold behind: the grant nobody was told of is given back at once, not
// when its TTL ends.
func TestCancelledLockLeavesNoOrphan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	tc := testcluster.New(t, 3, testcluster.Options{})
	ctx := context.Background()
	c := newClient(t, tc.Endpoints())
	const key, rounds = "edge/orphan", 30
	for i := 0; i < rounds; i++ {
		holder := tc.Locker(i % tc.N())
		if _, err := holder.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "holder", TTLMs: 60_000}); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		lctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() {
			l, err := c.Lock(lctx, key, client.WithTTL(60*time.Second))
			if err == nil {
				err = l.Unlock(ctx)
			}
			res <- err
		}()
		// Wait until the client is queued, then release and cancel at
		// nearly the same instant, the cancel a little later each round.
		waitFor(t, 5*time.Second, func() bool {
			info, err := holder.Inspect(ctx, key, api.ReadOptions{})
			return err == nil && len(info.Waiters) == 1
		}, func() string { return fmt.Sprintf("round %d: the client never queued", i) })
		go func() { _, _ = holder.Release(ctx, api.ReleaseRequest{Key: key, Owner: "holder"}) }()
		time.Sleep(time.Duration(i%6) * 300 * time.Microsecond) // the race's offset, not synchronisation
		cancel()
		lerr := <-res
		// Whatever the outcome, the key is free well before the 60 s TTL.
		var info api.LockInfo
		waitFor(t, 5*time.Second, func() bool {
			var err error
			info, err = holder.Inspect(ctx, key, api.ReadOptions{})
			return errors.Is(err, api.ErrNotFound) || (err == nil && len(info.Holders) == 0 && len(info.Waiters) == 0)
		}, func() string { return fmt.Sprintf("round %d (lock: %v): key still %+v", i, lerr, info) })
	}
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
