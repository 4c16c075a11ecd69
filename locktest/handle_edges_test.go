package locktest_test

import (
	"context"
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
