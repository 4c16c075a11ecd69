package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// TestRedislock: bsm/redislock (scripts run through go-redis' EVALSHA ->
// EVAL fallback) obtains, reads the TTL, refreshes and releases a lock
// with clients on different nodes, in RESP3 and RESP2.
func TestRedislock(t *testing.T) {
	tc := newCluster(t, 3)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			rc := []*redis.Client{goRedis(t, tc.resp[0], proto), goRedis(t, tc.resp[1], proto), goRedis(t, tc.resp[2], proto)}
			locker := []*redislock.Client{redislock.New(rc[0]), redislock.New(rc[1]), redislock.New(rc[2])}
			key := uniq("redislock")

			l, err := locker[0].Obtain(ctx, key, 5*time.Second, &redislock.Options{Metadata: "meta"})
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if l.Metadata() != "meta" {
				t.Fatalf("Metadata = %q", l.Metadata())
			}
			// The value (token + metadata) is visible on every node.
			for i, c := range rc {
				if v, err := c.Get(ctx, key).Result(); err != nil || v != l.Token()+"meta" {
					t.Fatalf("node %d: GET = %q, %v; want %q", i, v, err, l.Token()+"meta")
				}
			}
			if ttl, err := l.TTL(ctx); err != nil || ttl <= 0 || ttl > 5*time.Second {
				t.Fatalf("TTL = %v, %v; want in (0, 5s]", ttl, err)
			}
			// Held: another client on another node is refused at once.
			if _, err := locker[1].Obtain(ctx, key, 5*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("second Obtain: %v; want ErrNotObtained", err)
			}
			// The same token may re-obtain (its script's token-prefix path).
			l2, err := locker[2].Obtain(ctx, key, 5*time.Second, &redislock.Options{Token: l.Token(), Metadata: "meta"})
			if err != nil {
				t.Fatalf("re-Obtain with the holder's token: %v", err)
			}
			if l2.Token() != l.Token() {
				t.Fatalf("re-Obtain token %q, want %q", l2.Token(), l.Token())
			}

			if err := l.Refresh(ctx, 20*time.Second, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if ttl, err := l.TTL(ctx); err != nil || ttl <= 5*time.Second || ttl > 20*time.Second {
				t.Fatalf("TTL after Refresh(20s) = %v, %v; want in (5s, 20s]", ttl, err)
			}
			if d, err := rc[2].PTTL(ctx, key).Result(); err != nil || d <= 5*time.Second {
				t.Fatalf("PTTL on node 2 after Refresh = %v, %v", d, err)
			}

			// A waiter with retries gets the lock once the holder releases.
			got := make(chan error, 1)
			// Ends when Obtain returns (success, or its 15s context).
			go func() {
				wctx := ctxT(t, 15*time.Second)
				w, err := locker[1].Obtain(wctx, key, 5*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)})
				if err == nil {
					err = w.Release(wctx)
				}
				got <- err
			}()
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatalf("waiter: %v", err)
			}
			// Released and gone: the old lock's TTL is 0 and it cannot refresh.
			if ttl, err := l.TTL(ctx); err != nil || ttl != 0 {
				t.Fatalf("TTL after release = %v, %v; want 0", ttl, err)
			}
			if err := l.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Refresh after release: %v; want ErrNotObtained", err)
			}
			if _, err := rc[0].Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after release: %v; want redis.Nil", err)
			}

			// A short lease expires by itself.
			short, err := locker[2].Obtain(ctx, key, 300*time.Millisecond, nil)
			if err != nil {
				t.Fatalf("Obtain short: %v", err)
			}
			eventually(t, 5*time.Second, "the 300ms lease to expire", func() bool {
				_, err := rc[1].Get(ctx, key).Result()
				return errors.Is(err, redis.Nil)
			})
			if err := short.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("Release of an expired lock: %v; want ErrLockNotHeld", err)
			}
		})
	}
}
