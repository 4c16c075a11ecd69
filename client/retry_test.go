package client_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// TryLock with WithRetry against a key an outsider holds: the number of
// attempts the server sees, the time they take and the outcome.
func TestTryLockRetry(t *testing.T) {
	cases := []struct {
		name      string
		holdFor   time.Duration // the outsider's lease; 0: no outsider
		ctxFor    time.Duration // 0: no deadline
		opts      []client.LockOption
		wantErr   error
		wantTries int
		minTook   time.Duration
		maxTook   time.Duration
	}{
		{name: "free key, one attempt", opts: []client.LockOption{client.WithRetry(3, 10*time.Millisecond, 0)},
			wantTries: 1},
		{name: "no retry option: one attempt", holdFor: time.Minute,
			wantErr: api.ErrLocked, wantTries: 1},
		{name: "held throughout: every attempt, delay between", holdFor: time.Minute,
			opts:    []client.LockOption{client.WithRetry(3, 10*time.Millisecond, 0)},
			wantErr: api.ErrLocked, wantTries: 3, minTook: 20 * time.Millisecond, maxTook: 20 * time.Millisecond},
		{name: "freed by expiry: the third attempt wins", holdFor: 15 * time.Millisecond,
			opts:      []client.LockOption{client.WithRetry(5, 10*time.Millisecond, 0)},
			wantTries: 3, minTook: 20 * time.Millisecond, maxTook: 20 * time.Millisecond},
		{name: "jitter adds up to its bound per pause", holdFor: time.Minute,
			opts:    []client.LockOption{client.WithRetry(4, 10*time.Millisecond, 10*time.Millisecond)},
			wantErr: api.ErrLocked, wantTries: 4, minTook: 30 * time.Millisecond, maxTook: 60 * time.Millisecond},
		{name: "ctx ends the retries", holdFor: time.Minute, ctxFor: 25 * time.Millisecond,
			opts:    []client.LockOption{client.WithRetry(100, 10*time.Millisecond, 0)},
			wantErr: api.ErrCancelled, wantTries: 3, minTook: 25 * time.Millisecond, maxTook: 25 * time.Millisecond},
		{name: "zero attempts refused", opts: []client.LockOption{client.WithRetry(0, 0, 0)}, wantErr: api.ErrBadRequest},
		{name: "negative delay refused", opts: []client.LockOption{client.WithRetry(2, -time.Millisecond, 0)}, wantErr: api.ErrBadRequest},
		{name: "negative jitter refused", opts: []client.LockOption{client.WithRetry(2, 0, -time.Millisecond)}, wantErr: api.ErrBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fake, _ := bubbleClient(t)
				ctx := context.Background()
				if tc.holdFor > 0 {
					if _, err := fake.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "outsider", TTLMs: tc.holdFor.Milliseconds()}); err != nil {
						t.Fatal(err)
					}
				}
				before := fake.Calls("TryAcquire")
				if tc.ctxFor > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxFor)
					defer cancel()
				}
				start := time.Now()
				l, err := c.TryLock(ctx, "k", tc.opts...)
				took := time.Since(start)
				if tc.wantErr == nil {
					if err != nil {
						t.Fatalf("TryLock: %v", err)
					}
					defer l.Unlock(context.Background())
					if owner, _, _ := fake.Holder("k"); owner != l.Owner() {
						t.Fatalf("server holder %q, handle %q", owner, l.Owner())
					}
				} else if !errors.Is(err, tc.wantErr) {
					t.Fatalf("TryLock: %v, want %v", err, tc.wantErr)
				}
				if n := fake.Calls("TryAcquire") - before; n != tc.wantTries {
					t.Fatalf("%d attempts reached the server, want %d", n, tc.wantTries)
				}
				if took < tc.minTook || took > tc.maxTook {
					t.Fatalf("took %v, want %v..%v", took, tc.minTook, tc.maxTook)
				}
			})
		})
	}
}
