package redisbridge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// TestRedsyncQuorumOnOneCluster: redsync given three connections to the
// same key space (three "independent" Redis instances to it) must reach
// its quorum on every step: the FSM answers a repeated SET NX, extend and
// compare-and-delete by the same token as it answered the first one.
func TestRedsyncQuorumOnOneCluster(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+itoa(proto), func(t *testing.T) {
			s, _ := testServer(t, Config{})
			var pools []rsredis.Pool
			for i := 0; i < 3; i++ {
				pools = append(pools, rsgoredis.NewPool(goRedis(t, s, proto)))
			}
			rs := redsync.New(pools...)
			m := rs.NewMutex("redsync-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
			if err := m.Lock(); err != nil {
				t.Fatalf("lock: %v", err)
			}
			other := rs.NewMutex("redsync-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
			if err := other.Lock(); err == nil {
				t.Fatal("a second mutex got the held lock")
			}
			if ok, err := m.Extend(); err != nil || !ok {
				t.Fatalf("extend: %v %v", ok, err)
			}
			//lint:ignore SA1019 Valid asks every node, which is what this checks; Until does not
			if ok, err := m.Valid(); err != nil || !ok {
				t.Fatalf("valid: %v %v", ok, err)
			}
			if ok, err := m.Unlock(); err != nil || !ok {
				t.Fatalf("unlock: %v %v", ok, err)
			}
			// An extend after the release fails on every connection:
			// only a repeated unlock is answered from the tombstone.
			if ok, err := m.Extend(); err == nil || ok {
				t.Fatalf("extend after unlock: %v %v; want failure", ok, err)
			}
			if err := other.Lock(); err != nil {
				t.Fatalf("lock after unlock: %v", err)
			}
			if ok, err := other.Unlock(); err != nil || !ok {
				t.Fatalf("second unlock: %v %v", ok, err)
			}
		})
	}
}

// TestRedsyncMutualExclusion: concurrent redsync mutexes over several
// connections never overlap.
func TestRedsyncMutualExclusion(t *testing.T) {
	s, _ := testServer(t, Config{})
	var pools []rsredis.Pool
	for i := 0; i < 3; i++ {
		pools = append(pools, rsgoredis.NewPool(goRedis(t, s, 3)))
	}
	rs := redsync.New(pools...)
	var mu sync.Mutex
	inside, maxInside, done := 0, 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		// Ends after its iterations.
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				m := rs.NewMutex("contended", redsync.WithExpiry(5*time.Second), redsync.WithTries(200),
					redsync.WithRetryDelay(2*time.Millisecond))
				if err := m.Lock(); err != nil {
					t.Errorf("lock: %v", err)
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it across other clients' attempts
				mu.Lock()
				inside--
				done++
				mu.Unlock()
				// The FSM keeps one tombstone per key (the last releasing
				// token): if another worker takes and releases the lock
				// between this unlock's parallel votes, the late votes
				// find neither the key nor this token's tombstone and
				// answer -1, so redsync reports ErrLockAlreadyExpired
				// although the first vote did release it. Anything else
				// is a failure.
				if ok, err := m.Unlock(); !ok && !errors.Is(err, redsync.ErrLockAlreadyExpired) {
					t.Errorf("unlock: %v %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if maxInside != 1 || done != 20 {
		t.Fatalf("max holders at once %d (want 1), completed %d (want 20)", maxInside, done)
	}
}

// TestRedislock: bsm/redislock's obtain script (SET NX PX, then a
// same-token override via GETRANGE), refresh, TTL and release scripts.
func TestRedislock(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	c := goRedis(t, s, 3)
	locker := redislock.New(c)
	l, err := locker.Obtain(ctx, "bsm", 2*time.Second, nil)
	if err != nil {
		t.Fatalf("obtain: %v", err)
	}
	if _, err := locker.Obtain(ctx, "bsm", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("second obtain: %v", err)
	}
	if err := l.Refresh(ctx, 5*time.Second, nil); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if ttl, err := l.TTL(ctx); err != nil || ttl <= 2*time.Second || ttl > 5*time.Second {
		t.Fatalf("ttl %v %v", ttl, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	// A repeated release by the same token answers as the first did (the
	// FSM's tombstone, DESIGN.md "One key space"), so Redlock retries and
	// quorums over several connections agree.
	if err := l.Release(ctx); err != nil {
		t.Fatalf("repeated release: %v", err)
	}
	// An extend after the release is refused: nobody holds the lock.
	if err := l.Refresh(ctx, 5*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("refresh after release: %v; want ErrNotObtained", err)
	}
	if n, err := c.Exists(ctx, "bsm").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after refresh of a released lock = %d %v; want 0", n, err)
	}
	l2, err := locker.Obtain(ctx, "bsm", time.Second, nil)
	if err != nil {
		t.Fatalf("obtain after release: %v", err)
	}
	// The old token can no longer touch the new holder's lock (its
	// repeated release may still be answered from the tombstone, but it
	// changes nothing).
	l.Release(ctx)
	l.Refresh(ctx, time.Minute, nil)
	if v, err := c.Get(ctx, "bsm").Result(); err != nil || v != l2.Token() {
		t.Fatalf("after stale calls GET = %q %v, want the new holder's token", v, err)
	}
	if ttl, err := l2.TTL(ctx); err != nil || ttl > time.Second {
		t.Fatalf("new holder's TTL %v %v: the stale refresh extended it", ttl, err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatalf("release l2: %v", err)
	}
}

// TestWatchMultiExec: go-redis optimistic transaction (WATCH, GET, MULTI,
// SET, EXEC) succeeds alone and fails (TxFailedErr) when another client
// writes the watched key in between.
func TestWatchMultiExec(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	c := goRedis(t, s, 3)
	other := goRedis(t, s, 2)
	c.Set(ctx, "counter", "1", 0)
	incr := func(interfere bool) error {
		return c.Watch(ctx, func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, "counter").Int()
			if err != nil {
				return err
			}
			if interfere {
				other.Set(ctx, "counter", "100", 0)
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "counter", v+1, 0)
				return nil
			})
			return err
		}, "counter")
	}
	if err := incr(false); err != nil {
		t.Fatalf("tx: %v", err)
	}
	if v, _ := c.Get(ctx, "counter").Int(); v != 2 {
		t.Fatalf("counter = %d, want 2", v)
	}
	if err := incr(true); !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("tx with a concurrent write: %v, want TxFailedErr", err)
	}
	if v, _ := c.Get(ctx, "counter").Int(); v != 100 {
		t.Fatalf("counter = %d, want 100 (the interfering write only)", v)
	}
	// A watched key that does not exist and is then created also breaks it.
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		other.Set(ctx, "fresh", "x", 0)
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "fresh", "y", 0); return nil })
		return err
	}, "fresh")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("watch on a created key: %v", err)
	}
}
